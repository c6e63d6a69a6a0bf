/*
 * doca_dpa_dev_log for kernels running on the soft device. The function is variadic, which
 * stable Rust cannot define, so it is formatted here and handed to the Rust side.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <doca_dpa_dev.h>

void dpakit_emu_dev_log(uint32_t level, const char *message, size_t len);

void doca_dpa_dev_log(doca_dpa_dev_log_level_t log_level, const char *format, ...)
{
	char buf[512];
	va_list ap;
	int n;

	if (format == NULL)
		return;
	va_start(ap, format);
	n = vsnprintf(buf, sizeof(buf), format, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(buf))
		n = sizeof(buf) - 1;
	dpakit_emu_dev_log((uint32_t)log_level, buf, (size_t)n);
}
