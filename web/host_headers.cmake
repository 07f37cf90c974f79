# The wasm build's header-only dependencies. Emscripten's sysroot holds no packages, so
# nlohmann/json and Eigen come from the host: nlohmann/ through a link in the build tree,
# never /usr/include itself, whose glibc headers would shadow the sysroot's.
set(allocsim_host_headers ${CMAKE_BINARY_DIR}/host_headers)
file(MAKE_DIRECTORY ${allocsim_host_headers})
foreach(header /usr/include/nlohmann/json.hpp /usr/include/eigen3/Eigen/Dense)
  if(NOT EXISTS ${header})
    message(FATAL_ERROR "allocsim wasm: ${header} is missing (tools/setup installs it)")
  endif()
endforeach()
file(CREATE_LINK /usr/include/nlohmann ${allocsim_host_headers}/nlohmann SYMBOLIC)

add_library(nlohmann_json::nlohmann_json INTERFACE IMPORTED)
target_include_directories(nlohmann_json::nlohmann_json SYSTEM INTERFACE ${allocsim_host_headers})
add_library(Eigen3::Eigen INTERFACE IMPORTED)
target_include_directories(Eigen3::Eigen SYSTEM INTERFACE /usr/include/eigen3)
# One thread: the page replays on the main thread, and nothing it calls starts another.
add_library(Threads::Threads INTERFACE IMPORTED)

# Catching is off by default in emscripten: every error must stay the one-line Error the
# command line prints, so exceptions are on for compiling and linking alike.
add_compile_options(-fexceptions)
add_link_options(-fexceptions)
