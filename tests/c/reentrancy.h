/*
 * The re-entrancy matrix: what a callback may do to the objects around it, and what DOCA answers.
 *
 * A DOCA program may call any DOCA function from inside a callback, on any object: stop or destroy
 * the context whose callback runs, its siblings on the same progress engine, free or resubmit the
 * task, disconnect, progress or destroy the engine. Each case of the matrix is one callback the
 * soft device makes crossed with one such call. The call is made once, the first time the callback
 * runs; its result is checked against the answer DOCA's state machine gives for the state the
 * objects are in at that moment; then the program tears everything down in DOCA's order and must
 * get SUCCESS from every stop and destroy that is still due. A case passes only if all of that
 * holds and nothing crashed; the programs run under valgrind's memcheck too.
 *
 * The answers, for an object in a given state:
 *  - doca_ctx_stop: IDLE -> BAD_STATE; STOPPING -> IN_PROGRESS; a Comch server or client with
 *    producers or consumers on its connections -> IN_USE; otherwise SUCCESS or IN_PROGRESS (a
 *    context with tasks outstanding finishes stopping through progress);
 *  - a context's destroy: SUCCESS when IDLE, else BAD_STATE;
 *  - doca_pe_progress from a callback of the same engine: nothing runs (0);
 *  - doca_pe_destroy with contexts connected, or from its own progress: refused (BAD_STATE or
 *    IN_USE);
 *  - doca_task_submit of a completed task: SUCCESS while its context runs; while it stops, the
 *    task is taken back (SUCCESS, completing later with an error) or refused (BAD_STATE);
 *  - doca_comch_server_disconnect: BAD_STATE unless the server runs, NOT_CONNECTED once the
 *    connection is gone, IN_USE while producers or consumers exist on it, else SUCCESS.
 *
 * Every program includes this header once, after DOCA_LOG_REGISTER.
 */
#ifndef DPAKIT_TESTS_REENTRANCY_H
#define DPAKIT_TESTS_REENTRANCY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <doca_comch.h>
#include <doca_ctx.h>
#include <doca_error.h>
#include <doca_log.h>
#include <doca_pe.h>
#include <doca_version.h>

_Static_assert(DOCA_VERSION_LTE_CURRENT(2, 8, 0), "the DOCA 2.8 names of Comch are needed");

#define REENT_STEP_TIMEOUT_SEC 10.0
#define REENT_NAP_NSEC 20000

/* ---- What a callback does ---- */

enum reent_action {
	ACT_STOP_SELF,		/* doca_ctx_stop of the context whose callback runs */
	ACT_STOP_DESTROY_SELF,	/* the same, then its destroy */
	ACT_DESTROY_SELF,	/* its destroy, without a stop */
	ACT_PROGRESS,		/* doca_pe_progress of its engine */
	ACT_DESTROY_PE,		/* doca_pe_destroy of its engine */
	ACT_STOP_SIBLING,	/* stop (and destroy, once IDLE) another context of the engine */
	ACT_STOP_PARENT,	/* a fast-path endpoint's callback stops its Comch server or client */
	ACT_FREE_TASK,		/* doca_task_free of the callback's task */
	ACT_RESUBMIT_TASK,	/* doca_task_submit of the callback's task */
	ACT_DISCONNECT,		/* doca_comch_server_disconnect of the callback's connection */
	ACT_COUNT
};

static const char *const reent_action_names[ACT_COUNT] = {
	"stop itself",	  "stop and destroy itself", "destroy itself", "progress its PE",
	"destroy its PE", "stop a sibling",	     "stop its parent", "free the task",
	"resubmit the task", "disconnect",
};

/* A context a case can act on: its handle, its doca_ctx view and how to destroy it. */
struct reent_obj {
	const char *name;
	void *handle;	     /* NULL once destroyed */
	struct doca_ctx *ctx;
	doca_error_t (*destroy)(void *handle);
	bool is_parent;	     /* a Comch server or client */
	bool (*has_children)(const void *arg); /* producers or consumers on its connections */
	const void *children_arg;
};

/* What a callback hands the matrix: the objects around it. */
struct reent_site {
	struct reent_obj *self;
	struct reent_obj *sibling; /* another context on the engine (may be NULL) */
	struct reent_obj *parent;  /* for a fast-path endpoint: its server or client */
	struct doca_pe *pe;
	struct doca_task *task;	   /* for a task callback */
	bool in_progress;	   /* run by doca_pe_progress (not by doca_ctx_start or stop) */
	/* For server-side connection callbacks: */
	struct doca_comch_server *server;
	struct doca_comch_connection *connection;
	bool connection_live;
	bool connection_has_endpoints;
};

/* One case and what came of it. */
struct reent_case {
	int index;		/* its number in the matrix, for --case */
	int cb;			/* which callback (the program's own numbering) */
	bool server_role;	/* for Comch: the side under test is the server */
	const char *cb_name;
	enum reent_action action;
	bool fired;
	int calls;		/* DOCA calls the action made */
	doca_error_t got[2];
	uint32_t want[2];	/* the answers DOCA may give, one bit per doca_error_t */
	const char *what[2];
	bool task_consumed;	/* freed, resubmitted, or gone with its context */
	bool failed;
	char why[256];
};

#define REENT_BIT(code) (1u << (unsigned)(code))

static inline double reent_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline enum doca_ctx_states reent_state(const struct reent_obj *o)
{
	enum doca_ctx_states state = DOCA_CTX_STATE_IDLE;

	if (o->handle != NULL)
		doca_ctx_get_state(o->ctx, &state);
	return state;
}

/* The answers doca_ctx_stop may give for the object as it is now. */
static inline uint32_t reent_stop_answers(const struct reent_obj *o)
{
	switch (reent_state(o)) {
	case DOCA_CTX_STATE_IDLE:
		return REENT_BIT(DOCA_ERROR_BAD_STATE);
	case DOCA_CTX_STATE_STOPPING:
		return REENT_BIT(DOCA_ERROR_IN_PROGRESS);
	default:
		if (o->is_parent && o->has_children != NULL && o->has_children(o->children_arg))
			return REENT_BIT(DOCA_ERROR_IN_USE);
		return REENT_BIT(DOCA_SUCCESS) | REENT_BIT(DOCA_ERROR_IN_PROGRESS);
	}
}

static inline void reent_record(struct reent_case *c, const char *what, doca_error_t got, uint32_t want)
{
	if (c->calls < 2) {
		c->got[c->calls] = got;
		c->want[c->calls] = want;
		c->what[c->calls] = what;
		c->calls++;
	}
}

/* Destroys the object, recording the answer; forgets it on success. */
static inline void reent_destroy(struct reent_case *c, struct reent_obj *o, bool self, struct reent_site *s)
{
	uint32_t want = reent_state(o) == DOCA_CTX_STATE_IDLE ? REENT_BIT(DOCA_SUCCESS) :
								 REENT_BIT(DOCA_ERROR_BAD_STATE);
	doca_error_t got = o->destroy(o->handle);

	reent_record(c, "destroy", got, want);
	if (got == DOCA_SUCCESS) {
		o->handle = NULL;
		o->ctx = NULL;
		/* A destroyed context takes its tasks with it. */
		if (self && s->task != NULL)
			c->task_consumed = true;
	}
}

static inline void reent_stop(struct reent_case *c, struct reent_obj *o)
{
	uint32_t want = reent_stop_answers(o);

	reent_record(c, "doca_ctx_stop", doca_ctx_stop(o->ctx), want);
}

/*
 * Called by every callback of the program: if this is the case's callback and its action has not
 * run yet, runs it on the objects of the site. Returns whether it ran.
 */
static inline bool reent_hook(struct reent_case *c, int cb, struct reent_site *s)
{
	if (c->cb != cb || c->fired)
		return false;
	c->fired = true;
	switch (c->action) {
	case ACT_STOP_SELF:
		reent_stop(c, s->self);
		break;
	case ACT_STOP_DESTROY_SELF:
		reent_stop(c, s->self);
		reent_destroy(c, s->self, true, s);
		break;
	case ACT_DESTROY_SELF:
		reent_destroy(c, s->self, true, s);
		break;
	case ACT_PROGRESS: {
		uint8_t ran = doca_pe_progress(s->pe);

		/* From a callback of the same engine nothing runs; from a start's callback it may. */
		reent_record(c, "doca_pe_progress", ran ? DOCA_ERROR_UNKNOWN : DOCA_SUCCESS,
			     s->in_progress ? REENT_BIT(DOCA_SUCCESS) :
					      REENT_BIT(DOCA_SUCCESS) | REENT_BIT(DOCA_ERROR_UNKNOWN));
		break;
	}
	case ACT_DESTROY_PE:
		reent_record(c, "doca_pe_destroy", doca_pe_destroy(s->pe),
			     REENT_BIT(DOCA_ERROR_BAD_STATE) | REENT_BIT(DOCA_ERROR_IN_USE));
		break;
	case ACT_STOP_SIBLING:
		reent_stop(c, s->sibling);
		if (reent_state(s->sibling) == DOCA_CTX_STATE_IDLE)
			reent_destroy(c, s->sibling, false, s);
		break;
	case ACT_STOP_PARENT:
		reent_stop(c, s->parent);
		break;
	case ACT_FREE_TASK:
		doca_task_free(s->task);
		c->task_consumed = true;
		break;
	case ACT_RESUBMIT_TASK: {
		bool running = reent_state(s->self) == DOCA_CTX_STATE_RUNNING;
		doca_error_t got = doca_task_submit(s->task);

		reent_record(c, "doca_task_submit", got,
			     running ? REENT_BIT(DOCA_SUCCESS) :
				       REENT_BIT(DOCA_SUCCESS) | REENT_BIT(DOCA_ERROR_BAD_STATE));
		if (got == DOCA_SUCCESS)
			c->task_consumed = true;
		break;
	}
	case ACT_DISCONNECT: {
		uint32_t want = reent_state(s->parent) != DOCA_CTX_STATE_RUNNING ? REENT_BIT(DOCA_ERROR_BAD_STATE) :
				!s->connection_live			       ? REENT_BIT(DOCA_ERROR_NOT_CONNECTED) :
				s->connection_has_endpoints		       ? REENT_BIT(DOCA_ERROR_IN_USE) :
									 REENT_BIT(DOCA_SUCCESS);

		reent_record(c, "doca_comch_server_disconnect",
			     doca_comch_server_disconnect(s->server, s->connection), want);
		break;
	}
	default:
		break;
	}
	return true;
}

/* Whether the action applies where the callback runs (a task, a parent, a connection). */
static inline bool reent_applies(enum reent_action a, bool task, bool child, bool server_connection)
{
	switch (a) {
	case ACT_FREE_TASK:
	case ACT_RESUBMIT_TASK:
		return task;
	case ACT_STOP_PARENT:
		return child;
	case ACT_DISCONNECT:
		return server_connection;
	default:
		return true;
	}
}

/* Marks the case failed with a reason (the first one is kept). */
static inline void reent_fail(struct reent_case *c, const char *why, doca_error_t code)
{
	if (c->failed)
		return;
	c->failed = true;
	snprintf(c->why, sizeof(c->why), "%s%s%s", why, code == DOCA_SUCCESS ? "" : ": ",
		 code == DOCA_SUCCESS ? "" : doca_error_get_name(code));
}

/* Checks what the action got against what DOCA answers; prints the case's line. */
static inline bool reent_report(struct reent_case *c, int index)
{
	if (!c->fired)
		reent_fail(c, "the callback never ran", DOCA_SUCCESS);
	for (int i = 0; i < c->calls && !c->failed; i++) {
		if ((c->want[i] & REENT_BIT(c->got[i])) == 0) {
			char why[160];

			snprintf(why, sizeof(why), "%s answered %s, which is not what DOCA answers here",
				 c->what[i], doca_error_get_name(c->got[i]));
			reent_fail(c, why, DOCA_SUCCESS);
		}
	}
	printf("case %3d: %-28s x %-24s %s", index, c->cb_name, reent_action_names[c->action],
	       c->failed ? "FAIL" : "ok");
	for (int i = 0; i < c->calls; i++)
		printf(" [%s: %s]", c->what[i], doca_error_get_name(c->got[i]));
	if (c->failed)
		printf(" -- %s", c->why);
	printf("\n");
	fflush(stdout);
	return !c->failed;
}

/* ---- Progress and teardown ---- */

/* Progresses until done(arg) holds (true) or the step timeout passes (false). */
static inline bool reent_progress_until(struct doca_pe *pe, bool (*done)(void *arg), void *arg)
{
	struct timespec nap = {.tv_sec = 0, .tv_nsec = REENT_NAP_NSEC};
	double deadline = reent_now() + REENT_STEP_TIMEOUT_SEC;

	while (!done(arg)) {
		if (doca_pe_progress(pe) != 0)
			continue;
		if (reent_now() > deadline)
			return false;
		nanosleep(&nap, NULL);
	}
	return true;
}

static inline bool reent_obj_idle(void *arg)
{
	return reent_state(arg) == DOCA_CTX_STATE_IDLE;
}

/*
 * The end of a case for one object still alive: stopped (unless IDLE), progressed until IDLE and
 * destroyed, each with DOCA's SUCCESS (IN_PROGRESS for a stop that finishes through progress).
 */
static inline void reent_teardown(struct reent_case *c, struct doca_pe *pe, struct reent_obj *o)
{
	doca_error_t result;

	if (o->handle == NULL)
		return;
	if (reent_state(o) != DOCA_CTX_STATE_IDLE) {
		result = doca_ctx_stop(o->ctx);
		if (result != DOCA_SUCCESS && result != DOCA_ERROR_IN_PROGRESS) {
			char why[96];

			snprintf(why, sizeof(why), "stopping the %s at the end", o->name);
			reent_fail(c, why, result);
		}
		if (!reent_progress_until(pe, reent_obj_idle, o)) {
			char why[96];

			snprintf(why, sizeof(why), "the %s did not reach IDLE at the end", o->name);
			reent_fail(c, why, DOCA_ERROR_TIME_OUT);
			return;
		}
	}
	result = o->destroy(o->handle);
	if (result != DOCA_SUCCESS) {
		char why[96];

		snprintf(why, sizeof(why), "destroying the %s at the end", o->name);
		reent_fail(c, why, result);
		return;
	}
	o->handle = NULL;
	o->ctx = NULL;
}

/* Progresses `passes` more times: what the action set going (a stop, a disconnection) moves on. */
static inline void reent_settle(struct doca_pe *pe, int passes)
{
	struct timespec nap = {.tv_sec = 0, .tv_nsec = REENT_NAP_NSEC};

	for (int i = 0; i < passes; i++) {
		if (doca_pe_progress(pe) == 0)
			nanosleep(&nap, NULL);
	}
}

#endif /* DPAKIT_TESTS_REENTRANCY_H */
