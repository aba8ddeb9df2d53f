# Sourced by the ncu_* scripts: arguments [SIZE] [OUR_INSTANCE], the output folder and ncu.
size=${1:-4096}
inst=${2:-matmul_kernel__none__c0}
out=${OUT:-gpu-logs}
mkdir -p "$out"
export KERNEL_PTX_DIR=$PWD/target/gpu-bundle/ptx
ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -n1)
