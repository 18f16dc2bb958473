# Compiler warnings for every memledger target (style.md 5.12). -Werror with ML_WERROR=ON
# (make and CI; off in a plain cmake build).
set(ML_WARNING_FLAGS
    -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2
    -Wvla -Wcast-qual -Wwrite-strings -Wno-format-nonliteral)
if(CMAKE_C_COMPILER_ID STREQUAL "GNU")
  # snprintf into fixed fields truncates on purpose (names inside one-line messages).
  list(APPEND ML_WARNING_FLAGS -Wno-format-truncation)
endif()
if(ML_WERROR)
  list(APPEND ML_WARNING_FLAGS -Werror)
endif()

function(ml_target_warnings target)
  target_compile_options(${target} PRIVATE ${ML_WARNING_FLAGS})
endfunction()
