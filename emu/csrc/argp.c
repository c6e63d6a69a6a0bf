/*
 * DOCA's command-line parser on the soft device. The general flags (-h, -v, -l, --sdk-log-level,
 * -j) are registered by doca_argp_init as ordinary params of their own kind, so lookup,
 * duplicate names and the usage screen treat every flag alike.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <doca_argp.h>
#include <doca_log.h>

/* What giving a flag does: run the program's callback, or one of the general flags. */
enum flag_kind {
	FLAG_PROGRAM,
	FLAG_HELP,
	FLAG_VERSION,
	FLAG_LOG_LEVEL,
	FLAG_SDK_LOG_LEVEL,
	FLAG_JSON,
};

struct doca_argp_param {
	char *short_name;
	char *long_name;
	char *arguments;
	char *description;
	doca_argp_param_cb_t callback;
	enum doca_argp_type type;
	enum flag_kind kind;
	bool mandatory;
	bool multiplicity;
	bool registered;
	unsigned int seen; /* times given to the current doca_argp_start */
};

static const struct general_flag {
	const char *short_name;
	const char *long_name;
	const char *arguments;
	const char *description;
	enum doca_argp_type type;
	enum flag_kind kind;
} general_flags[] = {
	{"h", "help", NULL, "Print this help and exit", DOCA_ARGP_TYPE_BOOLEAN, FLAG_HELP},
	{"v", "version", NULL, "Print the program's version and exit", DOCA_ARGP_TYPE_BOOLEAN,
	 FLAG_VERSION},
	{"l", "log-level", "<level>",
	 "Program log level: 10 disable, 20 critical, 30 error, 40 warning, 50 info, 60 debug, "
	 "70 trace",
	 DOCA_ARGP_TYPE_INT, FLAG_LOG_LEVEL},
	{NULL, "sdk-log-level", "<level>", "SDK log level, same numbers as --log-level",
	 DOCA_ARGP_TYPE_INT, FLAG_SDK_LOG_LEVEL},
	{"j", "json", "<path>", "Read the flags from a JSON file (not supported by the soft device)",
	 DOCA_ARGP_TYPE_STRING, FLAG_JSON},
};

#define NUM_GENERAL_FLAGS (sizeof(general_flags) / sizeof(general_flags[0]))
#define LABEL_SIZE 160
#define USAGE_COLUMN 34

static struct {
	bool initialized;
	char *program_name;
	void *config;
	struct doca_argp_param **params; /* the general flags first, then the program's */
	size_t num_params;
	doca_argp_param_cb_t version_cb;
	doca_argp_validation_cb_t validation_cb;
} argp;

static const char *shown_name(void)
{
	return argp.program_name != NULL ? argp.program_name : "program";
}

/* One line on stderr headed by the program name. */
static void vreport(const char *format, va_list ap)
{
	char text[512];

	vsnprintf(text, sizeof(text), format, ap);
	fprintf(stderr, "%s: %s\n", shown_name(), text);
}

static void report(const char *format, ...) __attribute__((format(printf, 1, 2)));
static void report(const char *format, ...)
{
	va_list ap;

	va_start(ap, format);
	vreport(format, ap);
	va_end(ap);
}

static void hint(void)
{
	fprintf(stderr, "Run '%s -h' to see the flags.\n", shown_name());
}

/* A command-line error: the message, the hint, and the code for doca_argp_start to return. */
static doca_error_t fail(doca_error_t result, const char *format, ...)
	__attribute__((format(printf, 2, 3)));
static doca_error_t fail(doca_error_t result, const char *format, ...)
{
	va_list ap;

	va_start(ap, format);
	vreport(format, ap);
	va_end(ap);
	hint();
	return result;
}

static doca_error_t not_initialized(const char *func)
{
	fprintf(stderr, "%s: call doca_argp_init first\n", func);
	return DOCA_ERROR_BAD_STATE;
}

/* "-p/--pci-addr", "-p" or "--pci-addr". */
static const char *label(const struct doca_argp_param *p, char *buf, size_t size)
{
	if (p->short_name != NULL && p->long_name != NULL)
		snprintf(buf, size, "-%s/--%s", p->short_name, p->long_name);
	else if (p->short_name != NULL)
		snprintf(buf, size, "-%s", p->short_name);
	else if (p->long_name != NULL)
		snprintf(buf, size, "--%s", p->long_name);
	else
		snprintf(buf, size, "a flag without a name");
	return buf;
}

static const char *placeholder(const struct doca_argp_param *p)
{
	if (p->arguments != NULL)
		return p->arguments;
	return p->type == DOCA_ARGP_TYPE_INT ? "<int>" : "<string>";
}

static void set_string(char **field, const char *value)
{
	free(*field);
	*field = value != NULL ? strdup(value) : NULL;
}

static void free_param(struct doca_argp_param *p)
{
	free(p->short_name);
	free(p->long_name);
	free(p->arguments);
	free(p->description);
	free(p);
}

/* The registered flag called name[0..len) (long or short); NULL if none. */
static struct doca_argp_param *find(const char *name, size_t len, bool is_long)
{
	for (size_t i = 0; i < argp.num_params; i++) {
		const char *n = is_long ? argp.params[i]->long_name : argp.params[i]->short_name;

		if (n != NULL && strlen(n) == len && memcmp(n, name, len) == 0)
			return argp.params[i];
	}
	return NULL;
}

static bool taken(const char *name, bool is_long)
{
	return name != NULL && find(name, strlen(name), is_long) != NULL;
}

/* Absent, or non-empty without a leading dash, '=' or spaces (which the command line splits). */
static bool valid_name(const char *name)
{
	if (name == NULL)
		return true;
	if (name[0] == '\0' || name[0] == '-')
		return false;
	for (const char *c = name; *c != '\0'; c++) {
		if (*c == '=' || isspace((unsigned char)*c))
			return false;
	}
	return true;
}

static doca_error_t add_param(struct doca_argp_param *p)
{
	struct doca_argp_param **params;

	params = realloc(argp.params, (argp.num_params + 1) * sizeof(*params));
	if (params == NULL)
		return DOCA_ERROR_NO_MEMORY;
	argp.params = params;
	argp.params[argp.num_params++] = p;
	p->registered = true;
	return DOCA_SUCCESS;
}

static void free_all(void)
{
	for (size_t i = 0; i < argp.num_params; i++)
		free_param(argp.params[i]);
	free(argp.params);
	free(argp.program_name);
	memset(&argp, 0, sizeof(argp));
}

doca_error_t doca_argp_init(const char *program_name, void *program_config)
{
	if (argp.initialized) {
		fprintf(stderr, "doca_argp_init: already initialized; call doca_argp_destroy first\n");
		return DOCA_ERROR_BAD_STATE;
	}
	argp.initialized = true;
	argp.config = program_config;
	if (program_name != NULL && (argp.program_name = strdup(program_name)) == NULL)
		goto no_memory;
	for (size_t i = 0; i < NUM_GENERAL_FLAGS; i++) {
		const struct general_flag *g = &general_flags[i];
		struct doca_argp_param *p = calloc(1, sizeof(*p));

		if (p == NULL)
			goto no_memory;
		p->kind = g->kind;
		p->type = g->type;
		set_string(&p->short_name, g->short_name);
		set_string(&p->long_name, g->long_name);
		set_string(&p->arguments, g->arguments);
		set_string(&p->description, g->description);
		if (add_param(p) != DOCA_SUCCESS) {
			free_param(p);
			goto no_memory;
		}
	}
	return DOCA_SUCCESS;
no_memory:
	free_all();
	return DOCA_ERROR_NO_MEMORY;
}

doca_error_t doca_argp_destroy(void)
{
	if (!argp.initialized)
		return not_initialized(__func__);
	free_all();
	return DOCA_SUCCESS;
}

doca_error_t doca_argp_param_create(struct doca_argp_param **param)
{
	if (param == NULL)
		return DOCA_ERROR_INVALID_VALUE;
	*param = calloc(1, sizeof(**param));
	if (*param == NULL)
		return DOCA_ERROR_NO_MEMORY;
	(*param)->kind = FLAG_PROGRAM;
	return DOCA_SUCCESS;
}

doca_error_t doca_argp_param_destroy(struct doca_argp_param *param)
{
	if (param == NULL)
		return DOCA_ERROR_INVALID_VALUE;
	if (param->registered)
		return DOCA_ERROR_IN_USE;
	free_param(param);
	return DOCA_SUCCESS;
}

void doca_argp_param_set_short_name(struct doca_argp_param *param, const char *name)
{
	if (param != NULL)
		set_string(&param->short_name, name);
}

void doca_argp_param_set_long_name(struct doca_argp_param *param, const char *name)
{
	if (param != NULL)
		set_string(&param->long_name, name);
}

void doca_argp_param_set_arguments(struct doca_argp_param *param, const char *arguments)
{
	if (param != NULL)
		set_string(&param->arguments, arguments);
}

void doca_argp_param_set_description(struct doca_argp_param *param, const char *description)
{
	if (param != NULL)
		set_string(&param->description, description);
}

void doca_argp_param_set_callback(struct doca_argp_param *param, doca_argp_param_cb_t callback)
{
	if (param != NULL)
		param->callback = callback;
}

void doca_argp_param_set_type(struct doca_argp_param *param, enum doca_argp_type type)
{
	if (param != NULL)
		param->type = type;
}

void doca_argp_param_set_mandatory(struct doca_argp_param *param)
{
	if (param != NULL)
		param->mandatory = true;
}

void doca_argp_param_set_multiplicity(struct doca_argp_param *param)
{
	if (param != NULL)
		param->multiplicity = true;
}

doca_error_t doca_argp_register_param(struct doca_argp_param *input_param)
{
	struct doca_argp_param *p = input_param;
	doca_error_t result = DOCA_ERROR_INVALID_VALUE;
	const char *rule = NULL;
	char name[LABEL_SIZE];

	if (p == NULL)
		return DOCA_ERROR_INVALID_VALUE;
	if (!argp.initialized)
		return not_initialized(__func__);
	if (p->registered)
		rule = "is already registered";
	else if (p->short_name == NULL && p->long_name == NULL)
		rule = "needs a short or a long name";
	else if (!valid_name(p->short_name) || !valid_name(p->long_name))
		rule = "names are given without dashes, spaces or '='";
	else if (taken(p->short_name, false) || taken(p->long_name, true))
		rule = "a name is already used by another flag";
	else if (p->callback == NULL)
		rule = "has no callback";
	else if (p->type <= DOCA_ARGP_TYPE_UNKNOWN || p->type > DOCA_ARGP_TYPE_JSON_OBJ)
		rule = "has no type";
	else if (p->type == DOCA_ARGP_TYPE_JSON_OBJ) {
		rule = "JSON object flags need JSON input, which the soft device does not support";
		result = DOCA_ERROR_NOT_SUPPORTED;
	}
	if (rule != NULL) {
		fprintf(stderr, "doca_argp_register_param: %s: %s\n", label(p, name, sizeof(name)), rule);
		return result;
	}
	return add_param(p);
}

doca_error_t doca_argp_register_version_callback(doca_argp_param_cb_t callback)
{
	if (!argp.initialized)
		return not_initialized(__func__);
	if (callback == NULL)
		return DOCA_ERROR_INVALID_VALUE;
	argp.version_cb = callback;
	return DOCA_SUCCESS;
}

doca_error_t doca_argp_register_validation_callback(doca_argp_validation_cb_t callback)
{
	if (!argp.initialized)
		return not_initialized(__func__);
	if (callback == NULL)
		return DOCA_ERROR_INVALID_VALUE;
	argp.validation_cb = callback;
	return DOCA_SUCCESS;
}

/* One usage line: the names and placeholder, then the description from USAGE_COLUMN. */
static void print_flag(const struct doca_argp_param *p)
{
	char names[LABEL_SIZE];
	int n;

	if (p->short_name != NULL && p->long_name != NULL)
		n = snprintf(names, sizeof(names), "-%s, --%s", p->short_name, p->long_name);
	else if (p->short_name != NULL)
		n = snprintf(names, sizeof(names), "-%s", p->short_name);
	else
		n = snprintf(names, sizeof(names), "    --%s", p->long_name);
	if (p->type != DOCA_ARGP_TYPE_BOOLEAN && n > 0 && (size_t)n < sizeof(names))
		snprintf(names + n, sizeof(names) - (size_t)n, " %s", placeholder(p));
	printf("  %-*s", USAGE_COLUMN - 3, names);
	if (strlen(names) > USAGE_COLUMN - 3)
		printf("\n  %-*s", USAGE_COLUMN - 3, "");
	printf(" %s%s%s\n", p->description != NULL ? p->description : "",
	       p->mandatory ? " (required)" : "", p->multiplicity ? " (may repeat)" : "");
}

void doca_argp_usage(void)
{
	if (!argp.initialized) {
		not_initialized(__func__);
		return;
	}
	printf("Usage: %s [flags]\n\nGeneral flags:\n", shown_name());
	for (size_t i = 0; i < argp.num_params; i++) {
		if (i == NUM_GENERAL_FLAGS)
			printf("\nProgram flags:\n");
		print_flag(argp.params[i]);
	}
	fflush(stdout);
}

/* Decimal with an optional sign, nothing else, within int. */
static bool parse_int(const char *text, int *out)
{
	char *end;
	long value;

	if (text[0] == '\0' || isspace((unsigned char)text[0]))
		return false;
	errno = 0;
	value = strtol(text, &end, 10);
	if (errno != 0 || *end != '\0' || value < INT_MIN || value > INT_MAX)
		return false;
	*out = (int)value;
	return true;
}

static doca_error_t print_version(const char *name)
{
	doca_error_t result;

	if (argp.version_cb == NULL) {
		printf("%s: no version information\n", shown_name());
		exit(EXIT_SUCCESS);
	}
	result = argp.version_cb(NULL, argp.config);
	if (result != DOCA_SUCCESS)
		return fail(result, "%s: the version callback failed (%s)", name,
			    doca_error_get_name(result));
	exit(EXIT_SUCCESS);
}

/* Acts on one flag and its value (NULL for a boolean). */
static doca_error_t apply(struct doca_argp_param *p, const char *name, char *value)
{
	bool yes = true;
	int number = 0;
	void *arg = value;
	doca_error_t result;

	if (p->type == DOCA_ARGP_TYPE_INT) {
		if (!parse_int(value, &number))
			return fail(DOCA_ERROR_INVALID_VALUE, "%s: '%s' is not an integer", name, value);
		arg = &number;
	} else if (p->type == DOCA_ARGP_TYPE_BOOLEAN) {
		arg = &yes;
	}
	switch (p->kind) {
	case FLAG_HELP:
		doca_argp_usage();
		exit(EXIT_SUCCESS);
	case FLAG_VERSION:
		return print_version(name);
	case FLAG_LOG_LEVEL:
	case FLAG_SDK_LOG_LEVEL:
		/* A negative number wraps to an invalid level, which the setters refuse. */
		result = p->kind == FLAG_LOG_LEVEL ? doca_log_level_set_global_lower_limit((uint32_t)number)
						   : doca_log_level_set_global_sdk_limit((uint32_t)number);
		if (result != DOCA_SUCCESS)
			return fail(DOCA_ERROR_INVALID_VALUE,
				    "%s: %d is not a log level (10, 20, 30, 40, 50, 60 or 70)", name,
				    number);
		return DOCA_SUCCESS;
	case FLAG_JSON:
		return fail(DOCA_ERROR_NOT_SUPPORTED,
			    "%s: JSON flag files are not supported by the soft device; give the flags "
			    "on the command line",
			    name);
	case FLAG_PROGRAM:
		break;
	}
	result = p->callback(arg, argp.config);
	if (result != DOCA_SUCCESS)
		return fail(result, "%s: the program rejected %s%s%s (%s)", name, value ? "'" : "",
			    value ? value : "the flag", value ? "'" : "", doca_error_get_name(result));
	return DOCA_SUCCESS;
}

/* Parses the flag at argv[*i] and its value, moving *i past a value that follows it. */
static doca_error_t parse_flag(int argc, char **argv, int *i)
{
	char *arg = argv[*i];
	char *value = NULL;
	struct doca_argp_param *p;
	char name[LABEL_SIZE];

	if (arg == NULL || arg[0] != '-' || arg[1] == '\0')
		return fail(DOCA_ERROR_INVALID_VALUE, "unexpected argument '%s': values follow their flag",
			    arg != NULL ? arg : "(null)");
	if (arg[1] == '-') {
		char *eq = strchr(arg + 2, '=');

		p = find(arg + 2, eq != NULL ? (size_t)(eq - (arg + 2)) : strlen(arg + 2), true);
		if (eq != NULL)
			value = eq + 1;
	} else {
		p = find(arg + 1, strlen(arg + 1), false);
	}
	if (p == NULL)
		return fail(DOCA_ERROR_INVALID_VALUE, "unknown flag '%s'", arg);
	label(p, name, sizeof(name));
	if (p->seen > 0 && !p->multiplicity)
		return fail(DOCA_ERROR_INVALID_VALUE, "%s: given more than once", name);
	p->seen++;
	if (p->type == DOCA_ARGP_TYPE_BOOLEAN) {
		if (value != NULL)
			return fail(DOCA_ERROR_INVALID_VALUE, "%s: takes no value (got '%s')", name, value);
	} else if (value == NULL) {
		if (*i + 1 >= argc || argv[*i + 1] == NULL)
			return fail(DOCA_ERROR_INVALID_VALUE, "%s: needs a value %s", name, placeholder(p));
		value = argv[++*i];
	}
	return apply(p, name, value);
}

doca_error_t doca_argp_start(int argc, char **argv)
{
	doca_error_t result;
	bool missing = false;
	char name[LABEL_SIZE];

	if (!argp.initialized)
		return not_initialized(__func__);
	if (argc < 0 || (argc > 0 && argv == NULL))
		return DOCA_ERROR_INVALID_VALUE;
	if (argp.program_name == NULL && argc > 0 && argv[0] != NULL) {
		const char *slash = strrchr(argv[0], '/');

		argp.program_name = strdup(slash != NULL ? slash + 1 : argv[0]);
	}
	for (size_t i = 0; i < argp.num_params; i++)
		argp.params[i]->seen = 0;
	for (int i = 1; i < argc; i++) {
		result = parse_flag(argc, argv, &i);
		if (result != DOCA_SUCCESS)
			return result;
	}
	for (size_t i = 0; i < argp.num_params; i++) {
		const struct doca_argp_param *p = argp.params[i];

		if (p->mandatory && p->seen == 0) {
			report("%s: missing (the flag is mandatory)", label(p, name, sizeof(name)));
			missing = true;
		}
	}
	if (missing) {
		hint();
		return DOCA_ERROR_INVALID_VALUE;
	}
	if (argp.validation_cb != NULL) {
		result = argp.validation_cb(argp.config);
		if (result != DOCA_SUCCESS)
			return fail(result, "the program rejected its configuration (%s)",
				    doca_error_get_name(result));
	}
	return DOCA_SUCCESS;
}
