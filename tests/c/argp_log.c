/*
 * DOCA logging and argument parsing from C, against the soft SDK.
 *
 * In process: log sources, levels and limits, application and SDK file backends, whole lines
 * under concurrent logging, and the parser's API contract (misuse answered with DOCA's codes).
 * Then the program runs itself (ARGP_LOG_CHILD=full|bare) with command lines a user would type
 * and checks each run's exit status, stdout and stderr: parsed values, -h, -v, every kind of
 * command-line error, -l and --sdk-log-level, and where log lines go. Exits non-zero, naming
 * each failed check, if anything differs.
 *
 * One file on purpose: it is one program that runs itself with the command lines under
 * test, built against the soft SDK with one compiler call.
 */
#define DOCA_ALLOW_EXPERIMENTAL_API

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <doca_argp.h>
#include <doca_error.h>
#include <doca_log.h>

DOCA_LOG_REGISTER(ARGP_LOG_TEST);

static int failures;
static FILE *report; /* the real stderr, even while the test captures fd 2 */

#define EXPECT(call, code)                                                                         \
	do {                                                                                       \
		doca_error_t got_ = (call);                                                        \
		if (got_ != (code)) {                                                              \
			fprintf(report, "argp_log:%d: %s returned %s, expected %s\n", __LINE__,    \
				#call, doca_error_get_name(got_), doca_error_get_name(code));      \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

#define TRUE(cond)                                                                                 \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(report, "argp_log:%d: %s does not hold\n", __LINE__, #cond);       \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

#define HAS(text, part) TRUE(strstr((text), (part)) != NULL)
#define LACKS(text, part) TRUE(strstr((text), (part)) == NULL)

/* ---- Streams ---- */

/* Everything written to f so far (to free), without moving its position. */
static char *contents(FILE *f)
{
	struct stat st;
	char *text;
	ssize_t n;

	fflush(f);
	if (fstat(fileno(f), &st) != 0 || (text = malloc((size_t)st.st_size + 1)) == NULL) {
		fprintf(report, "argp_log: cannot read a temporary file\n");
		exit(EXIT_FAILURE);
	}
	n = pread(fileno(f), text, (size_t)st.st_size, 0);
	text[n > 0 ? n : 0] = '\0';
	return text;
}

static void empty(FILE *f)
{
	fflush(f);
	if (ftruncate(fileno(f), 0) != 0)
		exit(EXIT_FAILURE);
	rewind(f);
}

static FILE *temporary(void)
{
	FILE *f = tmpfile();

	if (f == NULL) {
		fprintf(report, "argp_log: cannot create a temporary file\n");
		exit(EXIT_FAILURE);
	}
	return f;
}

static FILE *captured;
static int saved_stderr;

/* Sends fd 2 to a temporary file: the parser's messages become something to check. */
static void capture_stderr(void)
{
	fflush(stderr);
	captured = temporary();
	saved_stderr = dup(2);
	dup2(fileno(captured), 2);
}

static char *release_stderr(void)
{
	char *text;

	fflush(stderr);
	dup2(saved_stderr, 2);
	close(saved_stderr);
	text = contents(captured);
	fclose(captured);
	return text;
}

/* ---- Logging, in process ---- */

#define WRITERS 4
#define LINES_PER_WRITER 250

static void *writer(void *arg)
{
	int id = (int)(long)arg;

	for (int i = 0; i < LINES_PER_WRITER; i++)
		DOCA_LOG_INFO("writer %d line %d of a message long enough to be written in pieces", id, i);
	return NULL;
}

/* Every line of text is a whole log line of a writer; returns how many there are, or -1. */
static int count_whole_writer_lines(const char *text)
{
	const char *marker = "[ARGP_LOG_TEST][INFO][writer] writer ";
	const char *suffix = " in pieces";
	int lines = 0;

	for (const char *line = text; *line != '\0'; lines++) {
		const char *end = strchr(line, '\n');
		const char *at = strstr(line, marker);

		if (end == NULL || line[0] != '[' || at == NULL || at > end ||
		    (size_t)(end - line) < strlen(suffix) ||
		    strncmp(end - strlen(suffix), suffix, strlen(suffix)) != 0)
			return -1;
		line = end + 1;
	}
	return lines;
}

static int occurrences(const char *text, const char *part)
{
	int n = 0;

	for (const char *at = strstr(text, part); at != NULL; at = strstr(at + 1, part))
		n++;
	return n;
}

static void log_checks(void)
{
	struct doca_log_backend *app_backend = NULL, *sdk_backend = NULL;
	FILE *app = temporary(), *sdk = temporary();
	char long_text[3000];
	pthread_t threads[WRITERS];
	int hours, minutes, seconds, micros;
	long pid;
	int second;
	char *text;

	/* Sources. */
	EXPECT(doca_log_register_source(NULL, &second), DOCA_ERROR_INVALID_VALUE);
	EXPECT(doca_log_register_source("X", NULL), DOCA_ERROR_INVALID_VALUE);
	EXPECT(doca_log_register_source("", &second), DOCA_ERROR_INVALID_VALUE);
	EXPECT(doca_log_register_source("SECOND_SOURCE", &second), DOCA_SUCCESS);
	TRUE(second != log_source && log_source >= 0);
	EXPECT(doca_log_unregister_source(-1), DOCA_ERROR_INVALID_VALUE);
	EXPECT(doca_log_unregister_source(100000), DOCA_ERROR_INVALID_VALUE);

	/* Backends. */
	TRUE(doca_log_level_get_global_lower_limit() == DOCA_LOG_LEVEL_INFO);
	TRUE(doca_log_level_get_global_sdk_limit() == DOCA_LOG_LEVEL_WARNING);
	EXPECT(doca_log_backend_create_with_file(NULL, &app_backend), DOCA_ERROR_INVALID_VALUE);
	EXPECT(doca_log_backend_create_with_file(app, NULL), DOCA_ERROR_INVALID_VALUE);
	EXPECT(doca_log_backend_create_with_file_sdk(NULL, &sdk_backend), DOCA_ERROR_INVALID_VALUE);
	EXPECT(doca_log_backend_create_with_file(app, &app_backend), DOCA_SUCCESS);
	EXPECT(doca_log_backend_create_with_file_sdk(sdk, &sdk_backend), DOCA_SUCCESS);

	/* Lines: timestamp, pid, source, level, function, message; INFO is the default limit. */
	DOCA_LOG_INFO("info %d", 1);
	DOCA_LOG_DBG("debug %d", 2);
	DOCA_LOG_ERR("error %s", "three");
	DOCA_LOG_CRIT("critical");
	DOCA_LOG_RATE_LIMIT_WARN("rate limited");
	DOCA_LOG_TRC("trace %d", 4);
	DOCA_LOG_INFO("ends with a newline\n");
	EXPECT(doca_log(DOCA_LOG_LEVEL_WARNING, second, __FILE__, __LINE__, __func__, "second source"),
	       DOCA_SUCCESS);
	EXPECT(doca_log(DOCA_LOG_LEVEL_DISABLE, log_source, __FILE__, __LINE__, __func__, "disable"),
	       DOCA_SUCCESS);
	text = contents(app);
	TRUE(sscanf(text, "[%d:%d:%d.%d][%ld]", &hours, &minutes, &seconds, &micros, &pid) == 5);
	TRUE(pid == (long)getpid());
	HAS(text, "[ARGP_LOG_TEST][INFO][log_checks] info 1\n");
	LACKS(text, "debug 2");
	HAS(text, "[ARGP_LOG_TEST][ERR][log_checks] error three\n");
	HAS(text, "[ARGP_LOG_TEST][CRIT][log_checks] critical\n");
	HAS(text, "[ARGP_LOG_TEST][WARN][log_checks] rate limited\n");
	LACKS(text, "trace 4");
	HAS(text, "ends with a newline\n[");
	HAS(text, "[SECOND_SOURCE][WARN][log_checks] second source\n");
	LACKS(text, "disable");
	free(text);
	text = contents(sdk);
	TRUE(text[0] == '\0'); /* application lines stay off SDK backends */
	free(text);
	empty(app);

	/* Refusals. */
	EXPECT(doca_log(35, log_source, __FILE__, __LINE__, __func__, "x"), DOCA_ERROR_INVALID_VALUE);
	EXPECT(doca_log(80, log_source, __FILE__, __LINE__, __func__, "x"), DOCA_ERROR_INVALID_VALUE);
	EXPECT(doca_log(DOCA_LOG_LEVEL_INFO, -1, __FILE__, __LINE__, __func__, "x"), DOCA_ERROR_INVALID_VALUE);
	EXPECT(doca_log(DOCA_LOG_LEVEL_INFO, 999, __FILE__, __LINE__, __func__, "x"), DOCA_ERROR_INVALID_VALUE);
	EXPECT(doca_log_unregister_source(second), DOCA_SUCCESS);
	EXPECT(doca_log_unregister_source(second), DOCA_ERROR_INVALID_VALUE);
	EXPECT(doca_log(DOCA_LOG_LEVEL_ERROR, second, __FILE__, __LINE__, __func__, "gone"),
	       DOCA_ERROR_INVALID_VALUE);
	EXPECT(doca_log_level_set_global_lower_limit(0), DOCA_ERROR_INVALID_VALUE);
	EXPECT(doca_log_level_set_global_lower_limit(35), DOCA_ERROR_INVALID_VALUE);
	EXPECT(doca_log_level_set_global_lower_limit(80), DOCA_ERROR_INVALID_VALUE);
	EXPECT(doca_log_level_set_global_sdk_limit(45), DOCA_ERROR_INVALID_VALUE);
	EXPECT(doca_log_backend_set_level_lower_limit(NULL, DOCA_LOG_LEVEL_INFO), DOCA_ERROR_INVALID_VALUE);
	EXPECT(doca_log_backend_set_level_lower_limit(app_backend, 45), DOCA_ERROR_INVALID_VALUE);
	EXPECT(doca_log_backend_set_level_lower_limit(sdk_backend, DOCA_LOG_LEVEL_INFO),
	       DOCA_ERROR_INVALID_VALUE);
	EXPECT(doca_log_backend_set_sdk_level(NULL, DOCA_LOG_LEVEL_INFO), DOCA_ERROR_INVALID_VALUE);
	EXPECT(doca_log_backend_set_sdk_level(app_backend, DOCA_LOG_LEVEL_INFO), DOCA_ERROR_INVALID_VALUE);
	EXPECT(doca_log_backend_set_sdk_level(sdk_backend, 15), DOCA_ERROR_INVALID_VALUE);
	TRUE(doca_log_level_get_global_lower_limit() == DOCA_LOG_LEVEL_INFO);

	/* The backend's limit and the global one both apply; the global one sets every backend's. */
	EXPECT(doca_log_backend_set_level_lower_limit(app_backend, DOCA_LOG_LEVEL_WARNING), DOCA_SUCCESS);
	DOCA_LOG_INFO("held back by the backend");
	DOCA_LOG_WARN("admitted by the backend");
	EXPECT(doca_log_backend_set_level_lower_limit(app_backend, DOCA_LOG_LEVEL_DEBUG), DOCA_SUCCESS);
	DOCA_LOG_DBG("held back by the global limit");
	EXPECT(doca_log_level_set_global_lower_limit(DOCA_LOG_LEVEL_DEBUG), DOCA_SUCCESS);
	TRUE(doca_log_level_get_global_lower_limit() == DOCA_LOG_LEVEL_DEBUG);
	DOCA_LOG_DBG("admitted at debug");
	EXPECT(doca_log_level_set_global_lower_limit(DOCA_LOG_LEVEL_DISABLE), DOCA_SUCCESS);
	DOCA_LOG_CRIT("held back while disabled");
	EXPECT(doca_log_level_set_global_lower_limit(DOCA_LOG_LEVEL_INFO), DOCA_SUCCESS);
	text = contents(app);
	LACKS(text, "held back");
	HAS(text, "admitted by the backend");
	HAS(text, "admitted at debug");
	free(text);
	empty(app);

	/* Long messages are cut to one line. */
	memset(long_text, 'y', sizeof(long_text) - 1);
	long_text[sizeof(long_text) - 1] = '\0';
	DOCA_LOG_INFO("%s", long_text);
	text = contents(app);
	TRUE(strlen(text) < 1100 && strchr(text, '\n') == text + strlen(text) - 1);
	free(text);
	empty(app);

	/* SDK messages: SDK backends only, by each one's SDK level. */
	dpakit_soft_sdk_log(DOCA_LOG_LEVEL_WARNING, "sdk warning");
	dpakit_soft_sdk_log(DOCA_LOG_LEVEL_INFO, "sdk info");
	EXPECT(doca_log_backend_set_sdk_level(sdk_backend, DOCA_LOG_LEVEL_DEBUG), DOCA_SUCCESS);
	dpakit_soft_sdk_log(DOCA_LOG_LEVEL_DEBUG, "sdk debug\n");
	dpakit_soft_sdk_log(35, "not a level");
	dpakit_soft_sdk_log(DOCA_LOG_LEVEL_ERROR, NULL);
	EXPECT(doca_log_level_set_global_sdk_limit(DOCA_LOG_LEVEL_ERROR), DOCA_SUCCESS);
	TRUE(doca_log_level_get_global_sdk_limit() == DOCA_LOG_LEVEL_ERROR);
	dpakit_soft_sdk_log(DOCA_LOG_LEVEL_WARNING, "sdk warning under the global limit");
	dpakit_soft_sdk_log(DOCA_LOG_LEVEL_CRIT, "sdk critical");
	EXPECT(doca_log_level_set_global_sdk_limit(DOCA_LOG_LEVEL_WARNING), DOCA_SUCCESS);
	text = contents(sdk);
	HAS(text, "[WARN] sdk warning\n");
	LACKS(text, "sdk info");
	HAS(text, "[DBG] sdk debug\n[");
	LACKS(text, "not a level");
	LACKS(text, "under the global limit");
	HAS(text, "[CRIT] sdk critical\n");
	free(text);
	text = contents(app);
	TRUE(text[0] == '\0'); /* SDK lines stay off application backends */
	free(text);

	/* Concurrent writers: every line whole. */
	for (long i = 0; i < WRITERS; i++)
		TRUE(pthread_create(&threads[i], NULL, writer, (void *)i) == 0);
	for (int i = 0; i < WRITERS; i++)
		pthread_join(threads[i], NULL);
	text = contents(app);
	TRUE(count_whole_writer_lines(text) == WRITERS * LINES_PER_WRITER);
	free(text);
	empty(app);
}

/* ---- The parser's API, in process ---- */

static doca_error_t count_flag(void *value, void *config)
{
	*(int *)config = *(int *)value;
	return DOCA_SUCCESS;
}

static doca_error_t validate_nothing(void *config)
{
	(void)config;
	return DOCA_SUCCESS;
}

static struct doca_argp_param *count_param(void)
{
	struct doca_argp_param *p = NULL;

	EXPECT(doca_argp_param_create(&p), DOCA_SUCCESS);
	doca_argp_param_set_long_name(p, "count");
	doca_argp_param_set_type(p, DOCA_ARGP_TYPE_INT);
	doca_argp_param_set_callback(p, count_flag);
	return p;
}

static void argp_api_checks(void)
{
	char *args[] = {"api", "--count", "5", NULL};
	char *unknown[] = {"/some/dir/renamed", "-z", NULL};
	struct doca_argp_param *p, *q;
	int count = 0;
	char *text;

	capture_stderr();

	/* Before doca_argp_init. */
	p = count_param();
	EXPECT(doca_argp_register_param(p), DOCA_ERROR_BAD_STATE);
	EXPECT(doca_argp_start(3, args), DOCA_ERROR_BAD_STATE);
	EXPECT(doca_argp_register_version_callback(count_flag), DOCA_ERROR_BAD_STATE);
	EXPECT(doca_argp_register_validation_callback(validate_nothing), DOCA_ERROR_BAD_STATE);
	EXPECT(doca_argp_destroy(), DOCA_ERROR_BAD_STATE);
	doca_argp_usage();

	/* NULL is refused or ignored, never a crash. */
	EXPECT(doca_argp_param_create(NULL), DOCA_ERROR_INVALID_VALUE);
	EXPECT(doca_argp_param_destroy(NULL), DOCA_ERROR_INVALID_VALUE);
	doca_argp_param_set_short_name(NULL, "x");
	doca_argp_param_set_long_name(NULL, "x");
	doca_argp_param_set_arguments(NULL, "x");
	doca_argp_param_set_description(NULL, "x");
	doca_argp_param_set_callback(NULL, count_flag);
	doca_argp_param_set_type(NULL, DOCA_ARGP_TYPE_INT);
	doca_argp_param_set_mandatory(NULL);
	doca_argp_param_set_multiplicity(NULL);

	EXPECT(doca_argp_init("api", &count), DOCA_SUCCESS);
	EXPECT(doca_argp_init("api", &count), DOCA_ERROR_BAD_STATE);
	EXPECT(doca_argp_register_param(NULL), DOCA_ERROR_INVALID_VALUE);
	EXPECT(doca_argp_register_version_callback(NULL), DOCA_ERROR_INVALID_VALUE);
	EXPECT(doca_argp_register_validation_callback(NULL), DOCA_ERROR_INVALID_VALUE);
	EXPECT(doca_argp_register_validation_callback(validate_nothing), DOCA_SUCCESS);

	/* What a param needs before it registers. */
	doca_argp_param_set_long_name(p, NULL);
	EXPECT(doca_argp_register_param(p), DOCA_ERROR_INVALID_VALUE); /* no name */
	doca_argp_param_set_long_name(p, "--count");
	EXPECT(doca_argp_register_param(p), DOCA_ERROR_INVALID_VALUE); /* dashes */
	doca_argp_param_set_long_name(p, "count");
	doca_argp_param_set_callback(p, NULL);
	EXPECT(doca_argp_register_param(p), DOCA_ERROR_INVALID_VALUE); /* no callback */
	doca_argp_param_set_callback(p, count_flag);
	doca_argp_param_set_type(p, DOCA_ARGP_TYPE_UNKNOWN);
	EXPECT(doca_argp_register_param(p), DOCA_ERROR_INVALID_VALUE); /* no type */
	doca_argp_param_set_type(p, DOCA_ARGP_TYPE_JSON_OBJ);
	EXPECT(doca_argp_register_param(p), DOCA_ERROR_NOT_SUPPORTED);
	doca_argp_param_set_type(p, DOCA_ARGP_TYPE_INT);
	EXPECT(doca_argp_register_param(p), DOCA_SUCCESS);
	EXPECT(doca_argp_register_param(p), DOCA_ERROR_INVALID_VALUE); /* twice */
	EXPECT(doca_argp_param_destroy(p), DOCA_ERROR_IN_USE);

	/* Names are unique, the general flags' included. */
	q = count_param();
	EXPECT(doca_argp_register_param(q), DOCA_ERROR_INVALID_VALUE);
	doca_argp_param_set_long_name(q, NULL);
	doca_argp_param_set_short_name(q, "h");
	EXPECT(doca_argp_register_param(q), DOCA_ERROR_INVALID_VALUE);
	doca_argp_param_set_short_name(q, "l");
	EXPECT(doca_argp_register_param(q), DOCA_ERROR_INVALID_VALUE);
	EXPECT(doca_argp_param_destroy(q), DOCA_SUCCESS);

	EXPECT(doca_argp_start(3, args), DOCA_SUCCESS);
	TRUE(count == 5);
	EXPECT(doca_argp_destroy(), DOCA_SUCCESS);
	EXPECT(doca_argp_destroy(), DOCA_ERROR_BAD_STATE);

	/* After destroy, a new description starts from nothing; the name comes from argv[0]. */
	EXPECT(doca_argp_init(NULL, &count), DOCA_SUCCESS);
	EXPECT(doca_argp_register_param(count_param()), DOCA_SUCCESS);
	EXPECT(doca_argp_start(2, unknown), DOCA_ERROR_INVALID_VALUE);
	EXPECT(doca_argp_destroy(), DOCA_SUCCESS);

	text = release_stderr();
	HAS(text, "doca_argp_register_param: call doca_argp_init first");
	HAS(text, "doca_argp_init: already initialized");
	HAS(text, "doca_argp_register_param: a flag without a name: needs a short or a long name");
	HAS(text, "doca_argp_register_param: --count: has no callback");
	HAS(text, "doca_argp_register_param: --count: a name is already used by another flag");
	HAS(text, "doca_argp_register_param: -h: a name is already used by another flag");
	HAS(text, "renamed: unknown flag '-z'\nRun 'renamed -h' to see the flags.\n");
	free(text);
}

/* ---- The program run as a user would run it ---- */

struct config {
	char pci[32];
	int count;
	bool exclusive;
	char tags[64];
};

static doca_error_t pci_flag(void *value, void *config)
{
	struct config *cfg = config;

	snprintf(cfg->pci, sizeof(cfg->pci), "%s", (const char *)value);
	return DOCA_SUCCESS;
}

static doca_error_t count_at_most_100(void *value, void *config)
{
	struct config *cfg = config;

	if (*(int *)value > 100)
		return DOCA_ERROR_NOT_PERMITTED;
	cfg->count = *(int *)value;
	return DOCA_SUCCESS;
}

static doca_error_t exclusive_flag(void *value, void *config)
{
	struct config *cfg = config;

	cfg->exclusive = *(bool *)value;
	return DOCA_SUCCESS;
}

static doca_error_t tag_flag(void *value, void *config)
{
	struct config *cfg = config;
	size_t used = strlen(cfg->tags);

	snprintf(cfg->tags + used, sizeof(cfg->tags) - used, "%s%s", used > 0 ? "," : "",
		 (const char *)value);
	return DOCA_SUCCESS;
}

static doca_error_t print_version(void *value, void *config)
{
	(void)value;
	(void)config;
	printf("argp_log version 1.2.3\n");
	return DOCA_SUCCESS;
}

static doca_error_t no_null_device(void *config)
{
	struct config *cfg = config;

	return strcmp(cfg->pci, "00:00.0") == 0 ? DOCA_ERROR_BAD_CONFIG : DOCA_SUCCESS;
}

static void add_flag(const char *short_name, const char *long_name, const char *arguments,
		     const char *description, enum doca_argp_type type, doca_argp_param_cb_t callback)
{
	struct doca_argp_param *p;

	if (doca_argp_param_create(&p) != DOCA_SUCCESS)
		exit(90);
	doca_argp_param_set_short_name(p, short_name);
	doca_argp_param_set_long_name(p, long_name);
	doca_argp_param_set_arguments(p, arguments);
	doca_argp_param_set_description(p, description);
	doca_argp_param_set_type(p, type);
	doca_argp_param_set_callback(p, callback);
	if (strcmp(long_name, "pci-addr") == 0)
		doca_argp_param_set_mandatory(p);
	if (strcmp(long_name, "tag") == 0)
		doca_argp_param_set_multiplicity(p);
	if (doca_argp_register_param(p) != DOCA_SUCCESS)
		exit(91);
}

/*
 * The child: "full" sets logging up as DOCA programs do (standard backend, SDK messages to
 * stderr from WARNING); "bare" creates no backend. Prints start=<result>, then on success the
 * configuration and one log line per level.
 */
static int child_main(const char *mode, int argc, char **argv)
{
	struct config cfg = {.count = -1};
	doca_error_t result;

	if (strcmp(mode, "full") == 0) {
		struct doca_log_backend *sdk;

		if (doca_log_backend_create_standard() != DOCA_SUCCESS ||
		    doca_log_backend_create_standard() != DOCA_SUCCESS ||
		    doca_log_backend_create_with_file_sdk(stderr, &sdk) != DOCA_SUCCESS ||
		    doca_log_backend_set_sdk_level(sdk, DOCA_LOG_LEVEL_WARNING) != DOCA_SUCCESS)
			return 92;
	}
	if (doca_argp_init(strcmp(mode, "full") == 0 ? "argp_log" : NULL, &cfg) != DOCA_SUCCESS)
		return 93;
	add_flag("p", "pci-addr", "<PCI_ADDR>", "PCI address of the device", DOCA_ARGP_TYPE_STRING,
		 pci_flag);
	add_flag("n", "count", "<n>", "Messages to send, at most 100", DOCA_ARGP_TYPE_INT,
		 count_at_most_100);
	add_flag("x", "exclusive", NULL, "Take the device for this program alone",
		 DOCA_ARGP_TYPE_BOOLEAN, exclusive_flag);
	add_flag("t", "tag", "<tag>", "A tag for the messages", DOCA_ARGP_TYPE_STRING, tag_flag);
	if (doca_argp_register_version_callback(print_version) != DOCA_SUCCESS ||
	    doca_argp_register_validation_callback(no_null_device) != DOCA_SUCCESS)
		return 94;
	result = doca_argp_start(argc, argv);
	printf("start=%s\n", doca_error_get_name(result));
	fflush(stdout);
	if (result != DOCA_SUCCESS) {
		doca_argp_destroy();
		return 3;
	}
	printf("pci=%s count=%d exclusive=%d tags=%s\n", cfg.pci, cfg.count, cfg.exclusive, cfg.tags);
	fflush(stdout);
	DOCA_LOG_CRIT("critical line");
	DOCA_LOG_ERR("error line");
	DOCA_LOG_WARN("warning line");
	DOCA_LOG_INFO("info line");
	DOCA_LOG_DBG("debug line");
	DOCA_LOG_TRC("trace line");
	dpakit_soft_sdk_log(DOCA_LOG_LEVEL_ERROR, "sdk error line");
	dpakit_soft_sdk_log(DOCA_LOG_LEVEL_DEBUG, "sdk debug line");
	return doca_argp_destroy() == DOCA_SUCCESS ? 0 : 95;
}

/* This program's file: argv[0] when it names one (so a tool that runs the program, valgrind's
 * --trace-children among them, follows the children too), else the kernel's link to it. */
static const char *self_path = "/proc/self/exe";

struct run {
	int status; /* exit status, or 128 + signal */
	char *out;
	char *err;
};

/* Runs this program as argv[0] "./bin/argp_log" with the given flags in the given mode. */
static struct run run_child(const char *mode, const char *const *flags)
{
	FILE *out = temporary(), *err = temporary();
	char *argv[32] = {"./bin/argp_log"};
	struct run r = {0};
	int status = 0;
	pid_t pid;

	for (int i = 0; flags[i] != NULL && i < 30; i++)
		argv[i + 1] = (char *)flags[i];
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid == 0) {
		dup2(fileno(out), 1);
		dup2(fileno(err), 2);
		setenv("ARGP_LOG_CHILD", mode, 1);
		execv(self_path, argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid) {
		fprintf(report, "argp_log: cannot run a child\n");
		exit(EXIT_FAILURE);
	}
	r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	r.out = contents(out);
	r.err = contents(err);
	fclose(out);
	fclose(err);
	return r;
}

/* A check on a run; on failure, shows the command line and what the child printed. */
#define RUN_TRUE(cond)                                                                             \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(report,                                                            \
				"argp_log:%d: %s does not hold for %s\n--- stdout\n%s--- stderr\n%s---\n", \
				__LINE__, #cond, what, r.out, r.err);                              \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

#define RUN(mode, ...)                                                                             \
	const char *const flags_[] = {__VA_ARGS__, NULL};                                          \
	const char *what = #__VA_ARGS__;                                                           \
	struct run r = run_child(mode, flags_)

#define DONE()                                                                                     \
	do {                                                                                       \
		free(r.out);                                                                       \
		free(r.err);                                                                       \
	} while (0)

/* A command line doca_argp_start refuses: its code, and stderr naming the problem and -h. */
static void refused(const char *const *flags, const char *code, const char *message)
{
	struct run r = run_child("full", flags);
	char what[256] = "";
	char start[64];

	for (int i = 0; flags[i] != NULL; i++)
		snprintf(what + strlen(what), sizeof(what) - strlen(what), "%s\"%s\"", i > 0 ? ", " : "",
			 flags[i]);

	snprintf(start, sizeof(start), "start=%s\n", code);
	RUN_TRUE(r.status == 3);
	RUN_TRUE(strstr(r.out, start) != NULL);
	RUN_TRUE(strstr(r.err, message) != NULL);
	RUN_TRUE(strstr(r.err, "Run 'argp_log -h' to see the flags.") != NULL);
	DONE();
}

static void command_line_checks(void)
{
	{
		RUN("full", "-p", "b1:00.0", "-n", "42", "--exclusive", "-t", "a", "--tag=b");
		RUN_TRUE(r.status == 0);
		RUN_TRUE(strstr(r.out, "start=DOCA_SUCCESS\npci=b1:00.0 count=42 exclusive=1 tags=a,b\n"));
		/* Standard backend: ERROR and CRIT on stderr, the rest on stdout; INFO by default. */
		RUN_TRUE(strstr(r.out, "[ARGP_LOG_TEST][INFO][child_main] info line\n"));
		RUN_TRUE(strstr(r.out, "[ARGP_LOG_TEST][WARN][child_main] warning line\n"));
		RUN_TRUE(strstr(r.err, "[ARGP_LOG_TEST][ERR][child_main] error line\n"));
		RUN_TRUE(strstr(r.err, "[ARGP_LOG_TEST][CRIT][child_main] critical line\n"));
		RUN_TRUE(!strstr(r.out, "error line") && !strstr(r.err, "info line"));
		RUN_TRUE(!strstr(r.out, "debug line") && !strstr(r.out, "trace line"));
		/* Created twice, the standard backend still writes each line once. */
		RUN_TRUE(occurrences(r.out, "info line") == 1);
		/* The SDK backend on stderr at WARNING. */
		RUN_TRUE(strstr(r.err, "[ERR] sdk error line\n"));
		RUN_TRUE(!strstr(r.err, "sdk debug line"));
		DONE();
	}
	{
		RUN("full", "--pci-addr=03:00.0", "--count", "-7", "-l", "60");
		RUN_TRUE(r.status == 0);
		RUN_TRUE(strstr(r.out, "pci=03:00.0 count=-7 exclusive=0 tags=\n"));
		RUN_TRUE(strstr(r.out, "[DBG][child_main] debug line\n"));
		RUN_TRUE(!strstr(r.out, "trace line"));
		DONE();
	}
	{
		RUN("full", "-p", "x", "--log-level=30");
		RUN_TRUE(r.status == 0);
		RUN_TRUE(!strstr(r.out, "info line") && !strstr(r.out, "warning line"));
		RUN_TRUE(strstr(r.err, "error line"));
		DONE();
	}
	{
		RUN("full", "-p", "x", "--sdk-log-level", "60");
		RUN_TRUE(r.status == 0);
		RUN_TRUE(strstr(r.err, "[DBG] sdk debug line\n"));
		DONE();
	}
	{
		RUN("full", "-h");
		RUN_TRUE(r.status == 0);
		RUN_TRUE(strstr(r.out, "Usage: argp_log [flags]\n"));
		RUN_TRUE(strstr(r.out, "-h, --help"));
		RUN_TRUE(strstr(r.out, "-l, --log-level <level>"));
		RUN_TRUE(strstr(r.out, "--sdk-log-level <level>"));
		RUN_TRUE(strstr(r.out, "-p, --pci-addr <PCI_ADDR>"));
		RUN_TRUE(strstr(r.out, "PCI address of the device (required)\n"));
		RUN_TRUE(strstr(r.out, "-n, --count <n>"));
		RUN_TRUE(strstr(r.out, "-x, --exclusive "));
		RUN_TRUE(strstr(r.out, "A tag for the messages (may repeat)\n"));
		RUN_TRUE(!strstr(r.out, "start="));
		DONE();
	}
	{
		RUN("bare", "-p", "x", "--version");
		RUN_TRUE(r.status == 0);
		RUN_TRUE(strstr(r.out, "argp_log version 1.2.3\n"));
		RUN_TRUE(!strstr(r.out, "start="));
		DONE();
	}
	{
		/* No backend: application lines on stderr by the global limit, SDK lines dropped. */
		RUN("bare", "-p", "x");
		RUN_TRUE(r.status == 0);
		RUN_TRUE(strstr(r.err, "[ARGP_LOG_TEST][ERR][child_main] error line\n"));
		RUN_TRUE(strstr(r.err, "[ARGP_LOG_TEST][INFO][child_main] info line\n"));
		RUN_TRUE(!strstr(r.err, "debug line") && !strstr(r.out, "info line"));
		RUN_TRUE(!strstr(r.err, "sdk "));
		DONE();
	}
	{
		/* ... unless the SDK limit is set: SDK lines it admits go to stderr. */
		RUN("bare", "-p", "x", "--sdk-log-level", "30");
		RUN_TRUE(r.status == 0);
		RUN_TRUE(strstr(r.err, "[dpakit_soft][ERR] sdk error line\n"));
		RUN_TRUE(!strstr(r.err, "sdk debug line"));
		DONE();
	}

	static const char *const no_pci[] = {"-n", "5", NULL};
	static const char *const unknown[] = {"-p", "x", "--bogus", NULL};
	static const char *const no_value[] = {"-n", "1", "-p", NULL};
	static const char *const not_int[] = {"-p", "x", "-n", "12abc", NULL};
	static const char *const too_big[] = {"-p", "x", "-n", "2147483648", NULL};
	static const char *const twice[] = {"-p", "a", "--pci-addr", "b", NULL};
	static const char *const rejected[] = {"-p", "x", "-n", "1000", NULL};
	static const char *const invalid_config[] = {"-p", "00:00.0", NULL};
	static const char *const bad_level[] = {"-p", "x", "-l", "35", NULL};
	static const char *const json[] = {"-p", "x", "--json", "flags.json", NULL};
	static const char *const bool_value[] = {"-p", "x", "--exclusive=yes", NULL};
	static const char *const stray[] = {"-p", "x", "stray", NULL};

	refused(no_pci, "DOCA_ERROR_INVALID_VALUE", "-p/--pci-addr: missing (the flag is mandatory)");
	refused(unknown, "DOCA_ERROR_INVALID_VALUE", "argp_log: unknown flag '--bogus'");
	refused(no_value, "DOCA_ERROR_INVALID_VALUE", "-p/--pci-addr: needs a value <PCI_ADDR>");
	refused(not_int, "DOCA_ERROR_INVALID_VALUE", "-n/--count: '12abc' is not an integer");
	refused(too_big, "DOCA_ERROR_INVALID_VALUE", "-n/--count: '2147483648' is not an integer");
	refused(twice, "DOCA_ERROR_INVALID_VALUE", "-p/--pci-addr: given more than once");
	refused(rejected, "DOCA_ERROR_NOT_PERMITTED",
		"-n/--count: the program rejected '1000' (DOCA_ERROR_NOT_PERMITTED)");
	refused(invalid_config, "DOCA_ERROR_BAD_CONFIG",
		"the program rejected its configuration (DOCA_ERROR_BAD_CONFIG)");
	refused(bad_level, "DOCA_ERROR_INVALID_VALUE", "-l/--log-level: 35 is not a log level");
	refused(json, "DOCA_ERROR_NOT_SUPPORTED", "-j/--json: JSON flag files are not supported");
	refused(bool_value, "DOCA_ERROR_INVALID_VALUE", "-x/--exclusive: takes no value (got 'yes')");
	refused(stray, "DOCA_ERROR_INVALID_VALUE", "unexpected argument 'stray'");
}

int main(int argc, char **argv)
{
	const char *child = getenv("ARGP_LOG_CHILD");

	if (child != NULL)
		return child_main(child, argc, argv);
	if (strchr(argv[0], '/') != NULL)
		self_path = argv[0];
	report = fdopen(dup(2), "w");
	if (report == NULL)
		return EXIT_FAILURE;
	setvbuf(report, NULL, _IONBF, 0);

	log_checks();
	argp_api_checks();
	command_line_checks();

	if (failures > 0) {
		fprintf(report, "argp_log: %d check(s) failed\n", failures);
		return EXIT_FAILURE;
	}
	printf("argp_log: every check passed\n");
	return EXIT_SUCCESS;
}
