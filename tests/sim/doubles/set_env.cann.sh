# shellcheck shell=sh disable=SC2046,SC2086,SC2155  # as Huawei writes it: unquoted exports
# CANN 8.5+ environment (test double of /usr/local/Ascend/cann-@VERSION@/set_env.sh, reached as
# /usr/local/Ascend/cann/set_env.sh). RECONSTRUCTED: no capture of the script exists; these are the
# variables the quay.io/ascend/cann 8.5.0 Dockerfile copies from it (Ascend/cann-container-image
# c5a67b3, cann/8.5.0-910b-ubuntu22.04-py3.11/Dockerfile) and vllm-ascend issue #6271's environment
# shows: every home is the versioned tree.
export ASCEND_TOOLKIT_HOME=/usr/local/Ascend/cann-@VERSION@
export LD_LIBRARY_PATH=/usr/local/Ascend/driver/lib64:/usr/local/Ascend/driver/lib64/common:/usr/local/Ascend/driver/lib64/driver:$LD_LIBRARY_PATH
export LD_LIBRARY_PATH=${ASCEND_TOOLKIT_HOME}/lib64:${ASCEND_TOOLKIT_HOME}/lib64/plugin/opskernel:${ASCEND_TOOLKIT_HOME}/lib64/plugin/nnengine:${ASCEND_TOOLKIT_HOME}/opp/built-in/op_impl/ai_core/tbe/op_tiling/lib/linux/$(arch):$LD_LIBRARY_PATH
export LD_LIBRARY_PATH=${ASCEND_TOOLKIT_HOME}/tools/aml/lib64:${ASCEND_TOOLKIT_HOME}/tools/aml/lib64/plugin:$LD_LIBRARY_PATH
export PYTHONPATH=${ASCEND_TOOLKIT_HOME}/python/site-packages:${ASCEND_TOOLKIT_HOME}/opp/built-in/op_impl/ai_core/tbe:$PYTHONPATH
export PATH=${ASCEND_TOOLKIT_HOME}/bin:${ASCEND_TOOLKIT_HOME}/tools/ccec_compiler/bin:$PATH
export ASCEND_AICPU_PATH=${ASCEND_TOOLKIT_HOME}
export ASCEND_OPP_PATH=${ASCEND_TOOLKIT_HOME}/opp
export TOOLCHAIN_HOME=${ASCEND_TOOLKIT_HOME}/toolkit
export ASCEND_HOME_PATH=${ASCEND_TOOLKIT_HOME}
