# Real kernels for calibration. CPU kernels (kernels/*.c) are in libdtsim through the top-level glob.
# MPI and CUDA/NCCL back ends are optional and added here when found.
