# Finds what the Python package builds with: Debian's python3 (another may come first on
# PATH, without headers) and pybind11 (pybind11-dev). Sets ALLOCSIM_PYTHON_FOUND and, when
# found, compiles every library position-independent so the module can link them.
if(NOT DEFINED Python_EXECUTABLE AND EXISTS /usr/bin/python3)
  set(Python_EXECUTABLE /usr/bin/python3)
endif()
find_package(Python 3.8 QUIET COMPONENTS Interpreter Development.Module)
if(Python_FOUND)
  find_package(pybind11 2.6 CONFIG QUIET)
endif()
if(Python_FOUND AND pybind11_FOUND)
  set(ALLOCSIM_PYTHON_FOUND ON)
  set(CMAKE_POSITION_INDEPENDENT_CODE ON)
  # Calls within a library stay direct, as in a position-dependent build: the binary keeps its speed.
  add_compile_options(-fno-semantic-interposition)
  message(STATUS "allocsim: Python package enabled (pybind11 ${pybind11_VERSION}, ${Python_EXECUTABLE})")
else()
  set(ALLOCSIM_PYTHON_FOUND OFF)
  message(STATUS "allocsim: no Python package (install pybind11-dev python3-pybind11 python3-dev)")
endif()
