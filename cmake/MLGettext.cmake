# Message catalogs (gettext, Debian's gettext package):
#   ml_catalogs (ALL)  msgfmt --check of each po/<lang>.po into locale/<lang>/LC_MESSAGES/memledger.mo
#                      in the build tree, where the binary finds it (src/main.c: locale/ next to
#                      the executable; installed: ../share/locale from bin/; MEMLEDGER_LOCALEDIR)
#   pot (ALL)          po/memledger.pot in the build tree: xgettext over every source file (a glob,
#                      so new files need no list) and the generated help texts
#   update-po          msgmerge the pot into po/*.po in the source tree (run before translating)
file(RELATIVE_PATH ML_LOCALEDIR_REL ${CMAKE_INSTALL_FULL_BINDIR} ${CMAKE_INSTALL_FULL_LOCALEDIR})
target_compile_definitions(memledger PRIVATE ML_LOCALEDIR_REL="${ML_LOCALEDIR_REL}")

file(GLOB ML_PO_FILES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/po/*.po)
set(ML_MO_FILES)
set(ML_POT ${PROJECT_BINARY_DIR}/po/memledger.pot)
if(NOT ML_ENABLE_NLS)
  return()
endif()
find_program(ML_MSGFMT msgfmt)
find_program(ML_XGETTEXT xgettext)
find_program(ML_MSGMERGE msgmerge)
if(NOT ML_MSGFMT OR NOT ML_XGETTEXT OR NOT ML_MSGMERGE)
  message(FATAL_ERROR "gettext's msgfmt, xgettext and msgmerge are needed (Debian: gettext; "
                      "scripts/install-deps.sh), or configure with -DML_ENABLE_NLS=OFF")
endif()

foreach(po ${ML_PO_FILES})
  get_filename_component(lang ${po} NAME_WE)
  set(mo ${PROJECT_BINARY_DIR}/locale/${lang}/LC_MESSAGES/memledger.mo)
  add_custom_command(
    OUTPUT ${mo}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/locale/${lang}/LC_MESSAGES
    COMMAND ${ML_MSGFMT} --check -o ${mo} ${po}
    DEPENDS ${po}
    COMMENT "Compiling the ${lang} message catalog")
  list(APPEND ML_MO_FILES ${mo})
endforeach()
add_custom_target(ml_catalogs ALL DEPENDS ${ML_MO_FILES})

# Paths relative to the source tree (and the build tree for the generated help), so that the
# pot's "#: src/main.c:52" references do not depend on where the tree is checked out.
file(GLOB_RECURSE ML_POT_SOURCES CONFIGURE_DEPENDS RELATIVE ${PROJECT_SOURCE_DIR}
     ${PROJECT_SOURCE_DIR}/src/*.c ${PROJECT_SOURCE_DIR}/lib/*.c ${PROJECT_SOURCE_DIR}/lib/*.h)
list(SORT ML_POT_SOURCES)
file(RELATIVE_PATH ML_HELP_REL ${PROJECT_BINARY_DIR} ${ML_CLI_HELP_C})
add_custom_command(
  OUTPUT ${ML_POT}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/po
  COMMAND ${ML_XGETTEXT} --language=C --from-code=UTF-8 --keyword=_ --keyword=N_
          --add-comments=TRANSLATORS: --package-name=memledger --package-version=${PROJECT_VERSION}
          --directory=${PROJECT_SOURCE_DIR} --directory=${PROJECT_BINARY_DIR} --output=${ML_POT}
          ${ML_POT_SOURCES} ${ML_HELP_REL}
  # The stories of the X() rows of two tables, read through _() where they are shown: the OOM
  # kinds (ML_OOM_KINDS, 7 fields, the 7th; ml_oom_kind_story in lib/oom/kinds.c) and the
  # evidence rows (ML_EVIDENCE, 8 fields, the 8th; diagnose's "named by" in lib/oom/diagnose.c);
  # plain text, never a format. Also the relations of ML_OOM_CHECKS (2 fields, the 2nd), shown
  # through _() in diagnose's text report.
  COMMAND ${ML_XGETTEXT} --language=C --from-code=UTF-8 --keyword= --keyword=X:7,7t --keyword=X:8,8t
          --keyword=X:2,2t --flag=X:7:no-c-format --flag=X:8:no-c-format --flag=X:2:no-c-format
          --join-existing --directory=${PROJECT_SOURCE_DIR} --output=${ML_POT}
          include/memledger/oom.h include/memledger/diagnose.h
  DEPENDS ${ML_CLI_HELP_C} ${ML_POT_SOURCES} ${PROJECT_SOURCE_DIR}/include/memledger/oom.h
          ${PROJECT_SOURCE_DIR}/include/memledger/diagnose.h
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
  COMMENT "Extracting the messages into po/memledger.pot")
add_custom_target(pot ALL DEPENDS ${ML_POT})
# memledger and pot both use the generated help: ml_cli_help writes it first, once.
add_dependencies(pot ml_cli_help)
add_dependencies(memledger ml_cli_help)

set(ML_UPDATE_PO)
foreach(po ${ML_PO_FILES})
  list(APPEND ML_UPDATE_PO COMMAND ${ML_MSGMERGE} --update --backup=none --quiet ${po} ${ML_POT})
endforeach()
add_custom_target(update-po ${ML_UPDATE_PO} DEPENDS ${ML_POT}
                  COMMENT "Merging po/memledger.pot into po/*.po")
