kill -TERM $$
