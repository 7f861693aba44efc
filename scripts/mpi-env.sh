# SPDX-License-Identifier: MIT
# Sourced by the scripts: lets mpirun run as root and oversubscribe the cores
# of a small machine (docs/dependencies.md, "MPI as root"). Not for production clusters.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
