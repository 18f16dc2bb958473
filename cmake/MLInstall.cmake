# install(): `cmake --install build [--prefix P]`, or `make install PREFIX=... DESTDIR=...`.
#   bin/memledger
#   share/man/man1/memledger.1, memledger-<cmd>.1          (when lowdown built them)
#   share/locale/<lang>/LC_MESSAGES/memledger.mo           (found from bin/ as ../share/locale)
#   share/bash-completion/completions/memledger            (bash-completion loads it on demand)
#   share/zsh/site-functions/_memledger                    (zsh's default fpath under the prefix)
#   share/fish/vendor_completions.d/memledger.fish
#   share/memledger/python/                                the PyTorch hook as a package source:
#                                                          `pip install` it, or put it on PYTHONPATH
# The Python wheel installs its own set instead (cmake/MLWheel.cmake).
if(ML_WHEEL)
  include(MLWheel)
  return()
endif()
install(TARGETS memledger RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(ML_MAN_PAGES)
  install(FILES ${ML_MAN_PAGES} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
endif()
foreach(mo ${ML_MO_FILES})
  file(RELATIVE_PATH rel ${PROJECT_BINARY_DIR}/locale ${mo})
  get_filename_component(dir ${rel} DIRECTORY)
  install(FILES ${mo} DESTINATION ${CMAKE_INSTALL_LOCALEDIR}/${dir})
endforeach()
install(FILES ${PROJECT_BINARY_DIR}/completions/memledger.bash
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME memledger)
install(FILES ${PROJECT_BINARY_DIR}/completions/_memledger DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/site-functions)
install(FILES ${PROJECT_BINARY_DIR}/completions/memledger.fish
        DESTINATION ${CMAKE_INSTALL_DATADIR}/fish/vendor_completions.d)
install(FILES python/pyproject.toml python/memledger_hook.py
        DESTINATION ${CMAKE_INSTALL_DATADIR}/memledger/python)
