# Compiler warnings for every memledger target (style.md 5.12). -Werror unless ML_WERROR=OFF.
set(ML_WARNING_FLAGS
    -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2
    -Wvla -Wcast-qual -Wwrite-strings -Wno-format-nonliteral
    # snprintf into fixed fields truncates on purpose (names in one-line messages).
    -Wno-format-truncation)
if(ML_WERROR)
  list(APPEND ML_WARNING_FLAGS -Werror)
endif()

function(ml_target_warnings target)
  target_compile_options(${target} PRIVATE ${ML_WARNING_FLAGS})
endfunction()
