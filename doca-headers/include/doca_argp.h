/*
 * dpakit soft device: DOCA's command-line parser.
 *
 * A program describes its flags (short name `-p`, long name `--pci-addr`, a type, a callback),
 * then doca_argp_start parses argv: `-p VALUE`, `--pci-addr VALUE` and `--pci-addr=VALUE`;
 * boolean flags take no value. Each flag's callback receives the parsed value (`char *` for
 * strings, `int *` for integers, `bool *` for booleans) and the program's configuration.
 *
 * Every program also has the general flags -h/--help (usage on stdout, exit 0), -v/--version
 * (the version callback, exit 0), -l/--log-level N (the global application log limit),
 * --sdk-log-level N (the global SDK log limit) and -j/--json PATH, which the soft device does
 * not support. Misuse on the command line is reported on stderr, naming the flag, and answered
 * with an error from doca_argp_start; the program decides whether to exit.
 *
 * The parser is process-wide state for the main thread, not thread safe.
 */
#ifndef DOCA_ARGP_H
#define DOCA_ARGP_H

#include <stdbool.h>
#include <doca_compat.h>
#include <doca_error.h>

#ifdef __cplusplus
extern "C" {
#endif

enum doca_argp_type {
	DOCA_ARGP_TYPE_UNKNOWN = 0,
	DOCA_ARGP_TYPE_STRING = 1,
	DOCA_ARGP_TYPE_INT = 2,
	DOCA_ARGP_TYPE_BOOLEAN = 3,
	DOCA_ARGP_TYPE_JSON_OBJ = 4, /* JSON input only: not supported by the soft device */
};

/* One flag's description. */
struct doca_argp_param;

/* A flag's callback: (the parsed value, the program configuration). */
typedef doca_error_t (*doca_argp_param_cb_t)(void *, void *);

/* Checks the whole configuration once every flag is parsed. */
typedef doca_error_t (*doca_argp_validation_cb_t)(void *);

/* Starts a description; program_name (NULL: taken from argv[0]) heads the usage screen. */
DOCA_EXPERIMENTAL
doca_error_t doca_argp_init(const char *program_name, void *program_config);

/* Parses argv[1..argc): each flag's callback, then the mandatory flags, then validation. */
DOCA_EXPERIMENTAL
doca_error_t doca_argp_start(int argc, char **argv);

/* Frees every registered flag; doca_argp_init may start again afterwards. */
DOCA_EXPERIMENTAL
doca_error_t doca_argp_destroy(void);

DOCA_EXPERIMENTAL
doca_error_t doca_argp_param_create(struct doca_argp_param **param);

/* The setters copy their strings and ignore a NULL param. Names come without dashes. */
DOCA_EXPERIMENTAL
void doca_argp_param_set_short_name(struct doca_argp_param *param, const char *name);

DOCA_EXPERIMENTAL
void doca_argp_param_set_long_name(struct doca_argp_param *param, const char *name);

/* The value's placeholder in the usage screen, e.g. "<PCI_ADDR>". */
DOCA_EXPERIMENTAL
void doca_argp_param_set_arguments(struct doca_argp_param *param, const char *arguments);

DOCA_EXPERIMENTAL
void doca_argp_param_set_description(struct doca_argp_param *param, const char *description);

DOCA_EXPERIMENTAL
void doca_argp_param_set_callback(struct doca_argp_param *param, doca_argp_param_cb_t callback);

DOCA_EXPERIMENTAL
void doca_argp_param_set_type(struct doca_argp_param *param, enum doca_argp_type type);

DOCA_EXPERIMENTAL
void doca_argp_param_set_mandatory(struct doca_argp_param *param);

/* The flag may be given more than once; its callback runs for each. */
DOCA_EXPERIMENTAL
void doca_argp_param_set_multiplicity(struct doca_argp_param *param);

/* Frees a param that was not registered (a registered one belongs to the parser: IN_USE). */
DOCA_EXPERIMENTAL
doca_error_t doca_argp_param_destroy(struct doca_argp_param *param);

/* Takes ownership of the param on success; on failure the caller keeps it. */
DOCA_EXPERIMENTAL
doca_error_t doca_argp_register_param(struct doca_argp_param *input_param);

/* Called as (NULL, program config) by -v/--version. */
DOCA_EXPERIMENTAL
doca_error_t doca_argp_register_version_callback(doca_argp_param_cb_t callback);

DOCA_EXPERIMENTAL
doca_error_t doca_argp_register_validation_callback(doca_argp_validation_cb_t callback);

/* Prints the usage screen to stdout. */
DOCA_EXPERIMENTAL
void doca_argp_usage(void);

#ifdef __cplusplus
}
#endif

#endif /* DOCA_ARGP_H */
