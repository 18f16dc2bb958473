# The Python wheel (pyproject.toml; scikit-build-core configures with ML_WHEEL=ON and installs into
# the wheel's platlib; docs/building.md, "The Python wheel"):
#   memledger/bin/memledger                        the command (memledger/_command.py runs it)
#   memledger/share/locale/<lang>/LC_MESSAGES/     the catalogs, ../share/locale from bin/ as
#                                                  src/main.c finds them in any installed tree
#   memledger/_licenses/                           the licences of what is linked in
#   memledger_hook.py                              the PyTorch hook, importable as before
# libyaml is linked statically from Debian's libyaml.a (MIT: its notice ships in _licenses/).
# Debian ships no libcjson.a: cJSON (MIT) stays a shared library here, and `auditwheel repair`
# (scripts/test-wheel.sh) copies it into the wheel beside the binary. A libcjson.a, when one is
# found, is linked statically too.
set(ML_PY memledger)

foreach(dep CJSON YAML)
  if(dep STREQUAL "CJSON")
    set(static_name libcjson.a)
  else()
    set(static_name libyaml.a)
  endif()
  find_library(ML_${dep}_STATIC NAMES ${static_name} HINTS ${${dep}_LIBRARY_DIRS} NO_CACHE)
  if(ML_${dep}_STATIC)
    set_target_properties(PkgConfig::${dep} PROPERTIES INTERFACE_LINK_LIBRARIES ${ML_${dep}_STATIC})
    message(STATUS "wheel: ${dep} linked statically from ${ML_${dep}_STATIC}")
  else()
    message(STATUS "wheel: ${dep} linked as a shared library (no ${static_name}; auditwheel repair bundles it)")
  endif()
endforeach()

install(TARGETS memledger RUNTIME DESTINATION ${ML_PY}/${CMAKE_INSTALL_BINDIR})
foreach(mo ${ML_MO_FILES})
  file(RELATIVE_PATH rel ${PROJECT_BINARY_DIR}/locale ${mo})
  get_filename_component(dir ${rel} DIRECTORY)
  install(FILES ${mo} DESTINATION ${ML_PY}/${CMAKE_INSTALL_LOCALEDIR}/${dir})
endforeach()
install(FILES ${PROJECT_SOURCE_DIR}/python/memledger_hook.py DESTINATION .)
# Debian's copyright files of the libraries linked in (cJSON, libyaml: both MIT).
foreach(doc libcjson1 libyaml-0-2)
  if(EXISTS /usr/share/doc/${doc}/copyright)
    install(FILES /usr/share/doc/${doc}/copyright DESTINATION ${ML_PY}/_licenses RENAME ${doc}.copyright)
  endif()
endforeach()
