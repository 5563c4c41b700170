# Finds the libraries attnspec links against and gives the C ones imported
# targets. Shared by the build and by the installed attnspecConfig.cmake, so a
# downstream find_package(attnspec) resolves exactly what the build used.
include_guard(GLOBAL)

find_package(Boost 1.74 REQUIRED)        # Multiprecision is header-only
find_package(nlohmann_json 3 REQUIRED)
find_package(Eigen3 3.3 REQUIRED NO_MODULE)
find_package(rapidcheck REQUIRED)

foreach(lib IN ITEMS gmp mpfr mpfi)
  string(TOUPPER ${lib} upper)
  find_library(ATTNSPEC_${upper}_LIBRARY NAMES ${lib})
  find_path(ATTNSPEC_${upper}_INCLUDE_DIR NAMES ${lib}.h)
  if(NOT ATTNSPEC_${upper}_LIBRARY OR NOT ATTNSPEC_${upper}_INCLUDE_DIR)
    message(FATAL_ERROR "attnspec needs lib${lib} (Debian: lib${lib}-dev); run scripts/install-deps.sh")
  endif()
  if(NOT TARGET attnspec_deps::${lib})
    add_library(attnspec_deps::${lib} UNKNOWN IMPORTED)
    set_target_properties(attnspec_deps::${lib} PROPERTIES
      IMPORTED_LOCATION "${ATTNSPEC_${upper}_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${ATTNSPEC_${upper}_INCLUDE_DIR}")
  endif()
endforeach()
