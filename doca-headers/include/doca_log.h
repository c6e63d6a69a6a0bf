/*
 * dpakit soft device: DOCA logging.
 *
 * Two streams of messages: the application's (DOCA_LOG_* in the program's own files, each file a
 * registered source) and the SDK's (what the soft device itself reports), each with its own
 * backends. An application message is written to an application backend when its level is at
 * or below both the global lower limit (default INFO) and the backend's limit; while the program
 * has created no application backend, such messages go to stderr. An SDK message is written to
 * each SDK backend whose SDK level admits it (a new SDK backend starts at the global SDK limit,
 * default WARNING); without SDK backends, SDK messages are dropped unless the program set the
 * global SDK limit, which sends those it admits to stderr. Every line is one write, so lines
 * from concurrent threads never mix.
 */
#ifndef DOCA_LOG_H
#define DOCA_LOG_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <doca_compat.h>
#include <doca_error.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Lower numbers are more severe; a limit admits every level at or below it. */
enum doca_log_level {
	DOCA_LOG_LEVEL_DISABLE = 10,
	DOCA_LOG_LEVEL_CRIT = 20,
	DOCA_LOG_LEVEL_ERROR = 30,
	DOCA_LOG_LEVEL_WARNING = 40,
	DOCA_LOG_LEVEL_INFO = 50,
	DOCA_LOG_LEVEL_DEBUG = 60,
	DOCA_LOG_LEVEL_TRACE = 70,
};

/* Where messages are written; backends live until the process exits. */
struct doca_log_backend;

/* Registers a source (a name shown on its lines); up to 256 at a time. */
DOCA_EXPERIMENTAL
doca_error_t doca_log_register_source(const char *source_name, int *source);

DOCA_EXPERIMENTAL
doca_error_t doca_log_unregister_source(int source);

/* Writes one application message; prefer the DOCA_LOG_* macros. */
DOCA_EXPERIMENTAL
doca_error_t doca_log(uint32_t level, int source, const char *fname, int line, const char *func,
		      const char *format, ...) __attribute__((format(printf, 6, 7)));

/* Application messages to stdout, ERROR and CRIT to stderr. Creating it again changes nothing. */
DOCA_EXPERIMENTAL
doca_error_t doca_log_backend_create_standard(void);

/* Application messages to a stream the caller keeps open. */
DOCA_EXPERIMENTAL
doca_error_t doca_log_backend_create_with_file(FILE *fptr, struct doca_log_backend **backend);

/* SDK messages to a stream the caller keeps open; its level starts at the global SDK limit. */
DOCA_EXPERIMENTAL
doca_error_t doca_log_backend_create_with_file_sdk(FILE *fptr, struct doca_log_backend **backend);

/* The SDK level of an SDK backend (INVALID_VALUE for an application backend). */
DOCA_EXPERIMENTAL
doca_error_t doca_log_backend_set_sdk_level(struct doca_log_backend *backend, uint32_t level);

/* The limit of an application backend (INVALID_VALUE for an SDK backend). */
DOCA_EXPERIMENTAL
doca_error_t doca_log_backend_set_level_lower_limit(struct doca_log_backend *backend, uint32_t level);

/* Sets the global application limit and the limit of every application backend. */
DOCA_EXPERIMENTAL
doca_error_t doca_log_level_set_global_lower_limit(uint32_t level);

DOCA_EXPERIMENTAL
uint32_t doca_log_level_get_global_lower_limit(void);

/* Sets the global SDK limit and the level of every SDK backend. */
DOCA_EXPERIMENTAL
doca_error_t doca_log_level_set_global_sdk_limit(uint32_t level);

DOCA_EXPERIMENTAL
uint32_t doca_log_level_get_global_sdk_limit(void);

/* dpakit soft device extension: writes one SDK message (a line, no format) to the SDK backends. */
void dpakit_soft_sdk_log(uint32_t level, const char *text);

/*
 * Declares this file's log source. The source registers before main (constructor priority 101)
 * so that constructors of lower priority can already log; a program that cannot register its
 * sources stops at once rather than losing its messages.
 */
#define DOCA_LOG_REGISTER(SOURCE)                                                                  \
	static int log_source __attribute__((unused)) = -1;                                        \
	__attribute__((constructor(101))) static void doca_log_register_this_file(void)            \
	{                                                                                          \
		doca_error_t result_ = doca_log_register_source(#SOURCE, &log_source);             \
		if (result_ != DOCA_SUCCESS) {                                                     \
			fprintf(stderr, "cannot register log source %s: %s\n", #SOURCE,            \
				doca_error_get_name(result_));                                     \
			abort();                                                                   \
		}                                                                                  \
	}

#define DOCA_LOG(level, format, ...)                                                               \
	doca_log(DOCA_LOG_LEVEL_##level, log_source, __FILE__, __LINE__, __func__, format,         \
		 ##__VA_ARGS__)

#define DOCA_LOG_CRIT(format, ...) DOCA_LOG(CRIT, format, ##__VA_ARGS__)
#define DOCA_LOG_ERR(format, ...) DOCA_LOG(ERROR, format, ##__VA_ARGS__)
#define DOCA_LOG_WARN(format, ...) DOCA_LOG(WARNING, format, ##__VA_ARGS__)
#define DOCA_LOG_INFO(format, ...) DOCA_LOG(INFO, format, ##__VA_ARGS__)
#define DOCA_LOG_DBG(format, ...) DOCA_LOG(DEBUG, format, ##__VA_ARGS__)

/* Trace messages compile away unless asked for; `if (0)` keeps their arguments type-checked. */
#ifdef DOCA_LOGGING_ALLOW_TRACE
#define DOCA_LOG_TRC(format, ...) DOCA_LOG(TRACE, format, ##__VA_ARGS__)
#else
#define DOCA_LOG_TRC(format, ...)                                                                  \
	do {                                                                                       \
		if (0)                                                                             \
			DOCA_LOG(TRACE, format, ##__VA_ARGS__);                                    \
	} while (0)
#endif

/* The soft device does not rate-limit: every message is written. */
#define DOCA_LOG_RATE_LIMIT_CRIT(format, ...) DOCA_LOG_CRIT(format, ##__VA_ARGS__)
#define DOCA_LOG_RATE_LIMIT_ERR(format, ...) DOCA_LOG_ERR(format, ##__VA_ARGS__)
#define DOCA_LOG_RATE_LIMIT_WARN(format, ...) DOCA_LOG_WARN(format, ##__VA_ARGS__)
#define DOCA_LOG_RATE_LIMIT_INFO(format, ...) DOCA_LOG_INFO(format, ##__VA_ARGS__)
#define DOCA_LOG_RATE_LIMIT_DBG(format, ...) DOCA_LOG_DBG(format, ##__VA_ARGS__)

#ifdef __cplusplus
}
#endif

#endif /* DOCA_LOG_H */
