/*
 * DOCA logging on the soft device: registered sources, application and SDK backends, and the
 * global limits. One mutex guards it all and is held while a line is written, which keeps lines
 * whole and in order; logging is off the datapath.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <doca_log.h>

#define MAX_SOURCES 256
#define MAX_SOURCE_NAME 64
#define MAX_BACKENDS 16
#define MAX_LINE 1024

enum backend_kind {
	BACKEND_STANDARD, /* application messages to stdout, ERROR and CRIT to stderr */
	BACKEND_APP_FILE,
	BACKEND_SDK_FILE,
};

struct doca_log_backend {
	enum backend_kind kind;
	FILE *file;
	uint32_t limit;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char sources[MAX_SOURCES][MAX_SOURCE_NAME]; /* "" = free slot */
static struct doca_log_backend backends[MAX_BACKENDS];
static int num_backends;
static int num_app_backends;
static uint32_t app_limit = DOCA_LOG_LEVEL_INFO;
static uint32_t sdk_limit = DOCA_LOG_LEVEL_WARNING;
/* Set by the program: without SDK backends, SDK messages then go to stderr. */
static bool sdk_limit_set;

static bool valid_level(uint32_t level)
{
	return level >= DOCA_LOG_LEVEL_DISABLE && level <= DOCA_LOG_LEVEL_TRACE && level % 10 == 0;
}

static const char *level_name(uint32_t level)
{
	switch (level) {
	case DOCA_LOG_LEVEL_CRIT:
		return "CRIT";
	case DOCA_LOG_LEVEL_ERROR:
		return "ERR";
	case DOCA_LOG_LEVEL_WARNING:
		return "WARN";
	case DOCA_LOG_LEVEL_INFO:
		return "INFO";
	case DOCA_LOG_LEVEL_DEBUG:
		return "DBG";
	default:
		return "TRC";
	}
}

/* DISABLE is a limit, not a message level: such messages are never written. */
static bool admits(uint32_t limit, uint32_t level)
{
	return level > DOCA_LOG_LEVEL_DISABLE && level <= limit;
}

/* "[12:34:56.789012][pid][SOURCE][LEVEL]" into buf; returns its length. */
static size_t line_prefix(char *buf, size_t size, const char *source, uint32_t level)
{
	struct timespec now;
	struct tm tm = {0};
	int n;

	clock_gettime(CLOCK_REALTIME, &now);
	localtime_r(&now.tv_sec, &tm);
	n = snprintf(buf, size, "[%02d:%02d:%02d.%06ld][%ld][%s][%s]", tm.tm_hour, tm.tm_min,
		     tm.tm_sec, now.tv_nsec / 1000, (long)getpid(), source, level_name(level));
	if (n < 0)
		return 0;
	return (size_t)n < size ? (size_t)n : size - 1;
}

/* Ends the line at len (dropping the text's own trailing newlines); returns the full length. */
static size_t end_line(char *buf, size_t len)
{
	if (len > MAX_LINE - 2)
		len = MAX_LINE - 2;
	while (len > 0 && buf[len - 1] == '\n')
		len--;
	buf[len++] = '\n';
	buf[len] = '\0';
	return len;
}

static void write_line(FILE *file, const char *line, size_t len)
{
	fwrite(line, 1, len, file);
	fflush(file);
}

/* Called with the lock held. */
static void write_app_line(uint32_t level, const char *line, size_t len)
{
	if (!admits(app_limit, level))
		return;
	if (num_app_backends == 0) {
		write_line(stderr, line, len);
		return;
	}
	for (int i = 0; i < num_backends; i++) {
		struct doca_log_backend *b = &backends[i];

		if (b->kind == BACKEND_SDK_FILE || !admits(b->limit, level))
			continue;
		if (b->kind == BACKEND_STANDARD)
			write_line(level <= DOCA_LOG_LEVEL_ERROR ? stderr : stdout, line, len);
		else
			write_line(b->file, line, len);
	}
}

doca_error_t doca_log_register_source(const char *source_name, int *source)
{
	doca_error_t result = DOCA_ERROR_NO_MEMORY;

	if (source_name == NULL || source_name[0] == '\0' || source == NULL)
		return DOCA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	for (int i = 0; i < MAX_SOURCES; i++) {
		if (sources[i][0] == '\0') {
			snprintf(sources[i], MAX_SOURCE_NAME, "%s", source_name);
			*source = i;
			result = DOCA_SUCCESS;
			break;
		}
	}
	pthread_mutex_unlock(&lock);
	return result;
}

doca_error_t doca_log_unregister_source(int source)
{
	doca_error_t result = DOCA_ERROR_INVALID_VALUE;

	if (source < 0 || source >= MAX_SOURCES)
		return DOCA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	if (sources[source][0] != '\0') {
		sources[source][0] = '\0';
		result = DOCA_SUCCESS;
	}
	pthread_mutex_unlock(&lock);
	return result;
}

doca_error_t doca_log(uint32_t level, int source, const char *fname, int line, const char *func,
		      const char *format, ...)
{
	char buf[MAX_LINE];
	size_t len;
	va_list ap;
	int n;

	(void)fname;
	(void)line;
	if (!valid_level(level) || format == NULL || source < 0 || source >= MAX_SOURCES)
		return DOCA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	if (sources[source][0] == '\0') {
		pthread_mutex_unlock(&lock);
		return DOCA_ERROR_INVALID_VALUE;
	}
	len = line_prefix(buf, sizeof(buf), sources[source], level);
	n = snprintf(buf + len, sizeof(buf) - len, "[%s] ", func != NULL ? func : "?");
	len += n > 0 ? (size_t)n : 0;
	if (len < sizeof(buf)) {
		va_start(ap, format);
		n = vsnprintf(buf + len, sizeof(buf) - len, format, ap);
		va_end(ap);
		len += n > 0 ? (size_t)n : 0;
	}
	len = end_line(buf, len);
	write_app_line(level, buf, len);
	pthread_mutex_unlock(&lock);
	return DOCA_SUCCESS;
}

/* Called with the lock held. */
static void write_sdk_line(uint32_t level, const char *line, size_t len)
{
	bool has_backend = false;

	for (int i = 0; i < num_backends; i++) {
		if (backends[i].kind != BACKEND_SDK_FILE)
			continue;
		has_backend = true;
		if (admits(backends[i].limit, level))
			write_line(backends[i].file, line, len);
	}
	if (!has_backend && sdk_limit_set && admits(sdk_limit, level))
		write_line(stderr, line, len);
}

void dpakit_soft_sdk_log(uint32_t level, const char *text)
{
	char buf[MAX_LINE];
	size_t len;
	int n;

	if (!valid_level(level) || text == NULL)
		return;
	len = line_prefix(buf, sizeof(buf), "dpakit_soft", level);
	n = snprintf(buf + len, sizeof(buf) - len, " %s", text);
	len = end_line(buf, len + (n > 0 ? (size_t)n : 0));
	pthread_mutex_lock(&lock);
	write_sdk_line(level, buf, len);
	pthread_mutex_unlock(&lock);
}

/* Adds a backend; NULL when the table is full. Called with the lock held. */
static struct doca_log_backend *add_backend(enum backend_kind kind, FILE *file)
{
	struct doca_log_backend *b;

	if (num_backends == MAX_BACKENDS)
		return NULL;
	b = &backends[num_backends++];
	b->kind = kind;
	b->file = file;
	b->limit = kind == BACKEND_SDK_FILE ? sdk_limit : app_limit;
	if (kind != BACKEND_SDK_FILE)
		num_app_backends++;
	return b;
}

doca_error_t doca_log_backend_create_standard(void)
{
	doca_error_t result = DOCA_SUCCESS;
	bool exists = false;

	pthread_mutex_lock(&lock);
	for (int i = 0; i < num_backends; i++)
		exists = exists || backends[i].kind == BACKEND_STANDARD;
	if (!exists && add_backend(BACKEND_STANDARD, NULL) == NULL)
		result = DOCA_ERROR_NO_MEMORY;
	pthread_mutex_unlock(&lock);
	return result;
}

static doca_error_t create_with_file(enum backend_kind kind, FILE *fptr,
				     struct doca_log_backend **backend)
{
	struct doca_log_backend *b;

	if (fptr == NULL || backend == NULL)
		return DOCA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	b = add_backend(kind, fptr);
	pthread_mutex_unlock(&lock);
	if (b == NULL)
		return DOCA_ERROR_NO_MEMORY;
	*backend = b;
	return DOCA_SUCCESS;
}

doca_error_t doca_log_backend_create_with_file(FILE *fptr, struct doca_log_backend **backend)
{
	return create_with_file(BACKEND_APP_FILE, fptr, backend);
}

doca_error_t doca_log_backend_create_with_file_sdk(FILE *fptr, struct doca_log_backend **backend)
{
	return create_with_file(BACKEND_SDK_FILE, fptr, backend);
}

/* Sets the limit of a backend of the SDK stream (sdk) or of the application stream. */
static doca_error_t set_backend_limit(struct doca_log_backend *backend, bool sdk, uint32_t level)
{
	if (backend == NULL || !valid_level(level))
		return DOCA_ERROR_INVALID_VALUE;
	if ((backend->kind == BACKEND_SDK_FILE) != sdk)
		return DOCA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	backend->limit = level;
	pthread_mutex_unlock(&lock);
	return DOCA_SUCCESS;
}

doca_error_t doca_log_backend_set_sdk_level(struct doca_log_backend *backend, uint32_t level)
{
	return set_backend_limit(backend, true, level);
}

doca_error_t doca_log_backend_set_level_lower_limit(struct doca_log_backend *backend, uint32_t level)
{
	return set_backend_limit(backend, false, level);
}

/* Sets the global limit of one stream and the limit of each of its backends. */
static doca_error_t set_global_limit(bool sdk, uint32_t level)
{
	if (!valid_level(level))
		return DOCA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	if (sdk) {
		sdk_limit = level;
		sdk_limit_set = true;
	} else {
		app_limit = level;
	}
	for (int i = 0; i < num_backends; i++) {
		if ((backends[i].kind == BACKEND_SDK_FILE) == sdk)
			backends[i].limit = level;
	}
	pthread_mutex_unlock(&lock);
	return DOCA_SUCCESS;
}

static uint32_t get_global_limit(const uint32_t *limit)
{
	uint32_t level;

	pthread_mutex_lock(&lock);
	level = *limit;
	pthread_mutex_unlock(&lock);
	return level;
}

doca_error_t doca_log_level_set_global_lower_limit(uint32_t level)
{
	return set_global_limit(false, level);
}

uint32_t doca_log_level_get_global_lower_limit(void)
{
	return get_global_limit(&app_limit);
}

doca_error_t doca_log_level_set_global_sdk_limit(uint32_t level)
{
	return set_global_limit(true, level);
}

uint32_t doca_log_level_get_global_sdk_limit(void)
{
	return get_global_limit(&sdk_limit);
}
