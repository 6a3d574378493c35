#pragma once
/// \file
/// \brief The communicator handle (MPI_Comm, with MPI_COMM_WORLD and MPI_COMM_NULL) for code
/// outside mpi/ that passes communicators on, to mpi/'s functions or to parallel HDF5, without
/// calling MPI itself.  Only mpi/ includes <mpi.h> (tests/layers/check_layers.py checks it).
#include <mpi.h>
