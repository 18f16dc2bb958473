#!/bin/sh
# check_pure.sh LIB.a... - the library rings never print, read files, the environment or the
# clock, spawn, load libraries or exit (style.md 5.9; DESIGN.md section 2). Only src/ may.
set -u
banned='fopen|fdopen|freopen|open|open64|openat|read|write|fwrite|fputs|puts|printf|fprintf|vprintf|vfprintf|putchar|fputc|getenv|secure_getenv|setenv|time|clock_gettime|gettimeofday|rand|srand|random|setlocale|dlopen|dlsym|exit|_exit|abort|system|popen|fork|execv|execvp|posix_spawn|posix_spawnp'
status=0
for lib in "$@"; do
    bad=$(nm -u "$lib" 2>/dev/null | awk '{print $NF}' | sed 's/@.*//' | grep -Ex "$banned" | sort -u)
    if [ -n "$bad" ]; then
        echo "$(basename "$lib") calls: $(echo $bad)"
        status=1
    fi
done
[ $status -eq 0 ] && echo "pure: $# libraries call no I/O, environment, clock or exit"
exit $status
