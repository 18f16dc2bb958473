# One source for help, man pages and completions: the command pages docs/cli/<cmd>.md, read at
# build time by tools/gen_cli_docs.c (the page format is described at its top).
#   ML_CLI_HELP_C    cli_help.c: cmd_<cmd>_usage[] for `memledger help <cmd>` (the memledger target)
add_executable(gen_cli_docs tools/gen_cli_docs.c)
ml_target_warnings(gen_cli_docs)

file(GLOB ML_CLI_PAGES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/cli/*.md)
set(ML_CLI_HELP_C ${PROJECT_BINARY_DIR}/cli_help.c)
add_custom_command(
  OUTPUT ${ML_CLI_HELP_C}
  COMMAND gen_cli_docs help ${ML_CLI_HELP_C} ${ML_CLI_PAGES}
  DEPENDS gen_cli_docs ${ML_CLI_PAGES}
  COMMENT "Generating the help texts from docs/cli")
