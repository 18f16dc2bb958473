# One source for help, man pages and completions: the command pages docs/cli/<cmd>.md, read at
# build time by tools/gen_cli_docs.c (the page format is described at its top).
#   ML_CLI_HELP_C    cli_help.c: cmd_<cmd>_usage[] for `memledger help <cmd>` (the memledger target)
#   ml_man           man/man1/memledger.1 and memledger-<cmd>.1, through lowdown (Debian's lowdown:
#                    a small C Markdown translator; without it there are no man pages)
#   ml_completions   completions/memledger.bash, _memledger (zsh), memledger.fish: the templates
#                    in completions/ with the commands and options of the pages
add_executable(gen_cli_docs tools/gen_cli_docs.c)
ml_target_warnings(gen_cli_docs)

file(GLOB ML_CLI_PAGES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/cli/*.md)
set(ML_CLI_HELP_C ${PROJECT_BINARY_DIR}/cli_help.c)
add_custom_command(
  OUTPUT ${ML_CLI_HELP_C}
  COMMAND gen_cli_docs help ${ML_CLI_HELP_C} ${ML_CLI_PAGES}
  DEPENDS gen_cli_docs ${ML_CLI_PAGES}
  COMMENT "Generating the help texts from docs/cli")
# One target owns the file, so that the targets using it (memledger, pot) never write it at once.
add_custom_target(ml_cli_help DEPENDS ${ML_CLI_HELP_C})

# ---- man pages -------------------------------------------------------------------------------
find_program(ML_LOWDOWN lowdown)
set(ML_MAN_PAGES)
if(ML_LOWDOWN)
  foreach(page ${ML_CLI_PAGES})
    get_filename_component(name ${page} NAME_WE)
    if(name STREQUAL "memledger")
      set(man memledger)
    else()
      set(man memledger-${name})
    endif()
    set(md ${PROJECT_BINARY_DIR}/man/${man}.1.md)
    set(out ${PROJECT_BINARY_DIR}/man/man1/${man}.1)
    add_custom_command(
      OUTPUT ${out}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/man/man1
      COMMAND gen_cli_docs man ${name} ${PROJECT_VERSION} ${md} ${ML_CLI_PAGES}
      COMMAND ${ML_LOWDOWN} -s -Tman --out-no-smarty -o ${out} ${md}
      DEPENDS gen_cli_docs ${ML_CLI_PAGES}
      COMMENT "Generating the man page ${man}(1)")
    list(APPEND ML_MAN_PAGES ${out})
  endforeach()
  add_custom_target(ml_man ALL DEPENDS ${ML_MAN_PAGES})
else()
  message(STATUS "lowdown not found: no man pages (scripts/install-deps.sh installs it)")
endif()

# ---- shell completions -----------------------------------------------------------------------
set(ML_COMPLETIONS)
foreach(shell_file bash:memledger.bash zsh:_memledger fish:memledger.fish)
  string(REPLACE ":" ";" parts ${shell_file})
  list(GET parts 0 shell)
  list(GET parts 1 file)
  set(template ${PROJECT_SOURCE_DIR}/completions/${file}.in)
  set(out ${PROJECT_BINARY_DIR}/completions/${file})
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/completions
    COMMAND gen_cli_docs ${shell} ${template} ${out} ${ML_CLI_PAGES}
    DEPENDS gen_cli_docs ${template} ${ML_CLI_PAGES}
    COMMENT "Generating the ${shell} completion from docs/cli")
  list(APPEND ML_COMPLETIONS ${out})
endforeach()
add_custom_target(ml_completions ALL DEPENDS ${ML_COMPLETIONS})

# A command's help is one message (one msgid for the translators), longer than the 4095 bytes C99
# promises every compiler takes; gcc and clang take it whole, so the generated file may exceed it.
set_source_files_properties(${ML_CLI_HELP_C} PROPERTIES COMPILE_OPTIONS "-Wno-overlength-strings")
