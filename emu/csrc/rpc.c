/*
 * doca_dpa_rpc on the soft device. The function is variadic: the C side asks the Rust side how
 * many arguments the RPC kernel takes, collects that many uint64_t values and hands them over.
 */
#include <stdarg.h>
#include <stdint.h>

#include <doca_dpa.h>

/* Both validate every argument and return the DOCA error code; defined in Rust (capi::dpa). */
doca_error_t dpakit_soft_internal_rpc_num_args(struct doca_dpa *dpa, doca_dpa_func_t *func,
					       uint64_t *retval, uint32_t *num_args);
doca_error_t dpakit_soft_internal_rpc_call(struct doca_dpa *dpa, doca_dpa_func_t *func,
					   uint64_t *retval, const uint64_t *args, uint32_t num_args);

#define RPC_MAX_ARGS 4u

doca_error_t doca_dpa_rpc(struct doca_dpa *dpa, doca_dpa_func_t *func, uint64_t *retval, ...)
{
	uint64_t args[RPC_MAX_ARGS] = {0};
	uint32_t num_args = 0;
	doca_error_t result;
	va_list ap;

	result = dpakit_soft_internal_rpc_num_args(dpa, func, retval, &num_args);
	if (result != DOCA_SUCCESS)
		return result;
	if (num_args > RPC_MAX_ARGS)
		num_args = RPC_MAX_ARGS;
	va_start(ap, retval);
	for (uint32_t i = 0; i < num_args; i++)
		args[i] = va_arg(ap, uint64_t);
	va_end(ap);
	return dpakit_soft_internal_rpc_call(dpa, func, retval, args, num_args);
}
