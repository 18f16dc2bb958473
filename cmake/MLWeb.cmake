# The web page's build (ML_WEB=ON, configured with Debian's emcmake; docs/web.md): the core and
# the config layer as the native build lists them, compiled to WebAssembly.
#   ML_WEB_DEPS    the directory scripts/web-sources.sh filled: src/cjson, src/libyaml and their
#                  headers under include/ (Debian's source packages; never in git)
#   ML_HOST_BUILD  a native build directory: its generated catalog_data.c, gpu_data.c and
#                  cli_help.c are compiled here too (the generators are native programs)
if(NOT EMSCRIPTEN)
  message(FATAL_ERROR "ML_WEB needs the Emscripten toolchain: configure with emcmake (make web)")
endif()
foreach(v ML_WEB_DEPS ML_HOST_BUILD)
  if(NOT ${v})
    message(FATAL_ERROR "ML_WEB needs -D${v}=DIR (make web sets both)")
  endif()
  get_filename_component(${v} ${${v}} ABSOLUTE)
endforeach()
foreach(f ${ML_WEB_DEPS}/src/cjson/cJSON.c ${ML_WEB_DEPS}/src/libyaml/src/parser.c ${ML_HOST_BUILD}/catalog_data.c
          ${ML_HOST_BUILD}/gpu_data.c ${ML_HOST_BUILD}/cli_help.c)
  if(NOT EXISTS ${f})
    message(FATAL_ERROR "${f} is missing (make web runs scripts/web-sources.sh and the native build first)")
  endif()
endforeach()

# cJSON and libyaml from their sources, under the names pkg-config gives them natively.
add_library(ml_web_cjson STATIC ${ML_WEB_DEPS}/src/cjson/cJSON.c)
target_include_directories(ml_web_cjson SYSTEM PUBLIC ${ML_WEB_DEPS}/include)
file(GLOB ML_WEB_YAML_SOURCES ${ML_WEB_DEPS}/src/libyaml/src/*.c)
add_library(ml_web_yaml STATIC ${ML_WEB_YAML_SOURCES})
target_include_directories(ml_web_yaml SYSTEM PUBLIC ${ML_WEB_DEPS}/include PRIVATE ${ML_WEB_DEPS}/src/libyaml/src)
# libyaml's configure would write these into config.h (Debian's 0.2.5).
target_compile_definitions(ml_web_yaml PRIVATE YAML_VERSION_MAJOR=0 YAML_VERSION_MINOR=2 YAML_VERSION_PATCH=5
                                               YAML_VERSION_STRING="0.2.5")
add_library(PkgConfig::CJSON ALIAS ml_web_cjson)
add_library(PkgConfig::YAML ALIAS ml_web_yaml)

set(ML_GEN_DIR ${ML_HOST_BUILD})
