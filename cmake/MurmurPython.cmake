# MURMUR_PYTHON (AUTO/ON/OFF): the `murmur` Python package (python/,
# docs/python.md). AUTO builds it when Python's headers and nanobind are
# found; ON fails the configure when they are not.
#
# The interpreter defaults to Debian's /usr/bin/python3, where python3-torch
# lives: the python3 first on PATH may be another one (pyenv) that has
# neither torch nor nanobind. Python_EXECUTABLE overrides it, and
# scikit-build-core sets it to the interpreter pip runs under.
set(MURMUR_PYTHON "AUTO" CACHE STRING "Build the murmur Python package: AUTO, ON or OFF")
set_property(CACHE MURMUR_PYTHON PROPERTY STRINGS AUTO ON OFF)
set(MURMUR_PYTHON_FOUND OFF)

if(NOT MURMUR_PYTHON STREQUAL "OFF")
  if(NOT DEFINED Python_EXECUTABLE AND EXISTS /usr/bin/python3)
    set(Python_EXECUTABLE /usr/bin/python3)
  endif()
  if(MURMUR_PYTHON STREQUAL "ON")
    set(murmur_python_required REQUIRED)
  endif()
  find_package(Python 3.9 COMPONENTS Interpreter Development.Module ${murmur_python_required})
  if(Python_FOUND)
    execute_process(COMMAND ${Python_EXECUTABLE} -m nanobind --cmake_dir
      OUTPUT_VARIABLE murmur_nanobind_dir OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
      RESULT_VARIABLE murmur_nanobind_rc)
    if(murmur_nanobind_rc EQUAL 0)
      list(APPEND CMAKE_PREFIX_PATH "${murmur_nanobind_dir}")
      find_package(nanobind CONFIG ${murmur_python_required})
    elseif(MURMUR_PYTHON STREQUAL "ON")
      message(FATAL_ERROR "MURMUR_PYTHON=ON: ${Python_EXECUTABLE} has no nanobind (scripts/setup.sh installs it)")
    endif()
  endif()
  if(Python_FOUND AND nanobind_FOUND)
    set(MURMUR_PYTHON_FOUND ON)
    message(STATUS "murmur Python package: ON (${Python_EXECUTABLE}, nanobind ${nanobind_VERSION})")
  else()
    message(STATUS "murmur Python package: OFF (needs Python headers and nanobind: scripts/setup.sh)")
  endif()
endif()
