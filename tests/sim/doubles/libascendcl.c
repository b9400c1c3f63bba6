/* Stand-in for CANN's libascendcl.so (test double): an empty shared library,
 * so that the pyACL double's dlopen succeeds only where the CANN environment
 * (set_env.sh's LD_LIBRARY_PATH) lets the loader find it, as on a real node. */
int ascend_sim_libascendcl_stub;
