# Checks that run before project(), where a wrong setting would otherwise fail with CMake's own,
# less helpful message.  The `cuda` preset takes its compiler from $KOKKOS_ROOT/bin/nvcc_wrapper:
# with KOKKOS_ROOT unset or wrong, say what to do.
if(CMAKE_CXX_COMPILER MATCHES "nvcc_wrapper$" AND NOT EXISTS "${CMAKE_CXX_COMPILER}")
  message(FATAL_ERROR
    "${CMAKE_CXX_COMPILER} does not exist: set KOKKOS_ROOT to the prefix of a Kokkos built with "
    "CUDA (cmake/deps-cuda.sh KOKKOS_SOURCE PREFIX builds one; see cmake/README.md)")
endif()
