# shellcheck shell=sh
# CANN toolkit environment (test double of /usr/local/Ascend/ascend-toolkit/set_env.sh).
# The same variables the real script exports, pointing into the simulated toolkit.
export ASCEND_TOOLKIT_HOME=/usr/local/Ascend/ascend-toolkit/latest
export ASCEND_HOME_PATH="${ASCEND_TOOLKIT_HOME}"
export LD_LIBRARY_PATH="${ASCEND_TOOLKIT_HOME}/lib64:${ASCEND_TOOLKIT_HOME}/lib64/plugin/opskernel:${ASCEND_TOOLKIT_HOME}/lib64/plugin/nnengine:${LD_LIBRARY_PATH:-}"
export PYTHONPATH="${ASCEND_TOOLKIT_HOME}/python/site-packages:${ASCEND_TOOLKIT_HOME}/opp/built-in/op_impl/ai_core/tbe:${PYTHONPATH:-}"
export PATH="${ASCEND_TOOLKIT_HOME}/bin:${ASCEND_TOOLKIT_HOME}/compiler/ccec_compiler/bin:${PATH}"
export ASCEND_AICPU_PATH="${ASCEND_TOOLKIT_HOME}"
export ASCEND_OPP_PATH="${ASCEND_TOOLKIT_HOME}/opp"
export TOOLCHAIN_HOME="${ASCEND_TOOLKIT_HOME}/toolkit"
