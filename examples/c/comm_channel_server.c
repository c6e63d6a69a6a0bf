/*
 * Legacy Comm Channel, service side: the partner of comm_channel_client.c, written like DOCA
 * 2.8's Comm Channel samples. It listens under a name on the BlueField Arm device and the
 * representor of the client's host function and answers every message on the connection it came
 * from: with the message itself, or with TEXT when -t is given. It waits on the endpoint's
 * receive channel with epoll, and exits once it has answered COUNT messages and a client has
 * disconnected (or on SIGINT/SIGTERM).
 *
 * It serves any number of clients and waits on none of them: an answer that finds its client's
 * send queue full waits in a small queue of that client's (and past it is dropped, with a log
 * line), retried every pass; a client whose connection fails (it left or died, broke the
 * protocol, or took nothing until the device aborted its connection) is disconnected, and the
 * others are served on.
 *
 * It is a plain DOCA program: built against the soft SDK it runs on the soft device, built
 * against DOCA up to 2.8 it runs on a BlueField's Arm cores.
 *
 *   cargo xtask soft-sdk
 *   export PKG_CONFIG_PATH=target/soft-doca/lib/pkgconfig
 *   cc examples/c/comm_channel_server.c $(pkg-config --cflags --libs doca-comch doca-argp doca-common) \
 *      -o comm_channel_server
 *   ./comm_channel_server [-p PCI_ADDR] [-r REP_PCI_ADDR] [-s NAME] [-t TEXT] [-c COUNT]
 */
#define DOCA_ALLOW_EXPERIMENTAL_API

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <doca_comm_channel.h>
#include <doca_log.h>

DOCA_LOG_REGISTER(COMM_CHANNEL_SERVER);

#include "comch_common.h"

#define CC_MAX_MSG_SIZE 4080
#define CC_QUEUE_SIZE 64
#define CC_IDLE_TIMEOUT_SEC 10
#define CC_BACKLOG 8	/* answers kept per client whose send queue is full */
#define CC_RETRY_MS 10	/* how soon answers kept for busy clients are retried */

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static doca_error_t register_flags(void)
{
	doca_error_t result;

	result = register_flag("p", "pci-addr", "<PCI_ADDR>",
			       "Arm-side device to listen on (default 03:00.0)", DOCA_ARGP_TYPE_STRING,
			       pci_addr_flag);
	if (result == DOCA_SUCCESS)
		result = register_flag("r", "rep-pci", "<PCI_ADDR>",
				       "representor of the client's host function (default b1:00.0)",
				       DOCA_ARGP_TYPE_STRING, rep_pci_flag);
	if (result == DOCA_SUCCESS)
		result = register_flag("s", "service-name", "<NAME>",
				       "name the client connects to (default dpakit_cc)",
				       DOCA_ARGP_TYPE_STRING, server_name_flag);
	if (result == DOCA_SUCCESS)
		result = register_flag("t", "text", "<TEXT>",
				       "answer every message with this text (default: echo it)",
				       DOCA_ARGP_TYPE_STRING, text_flag);
	if (result == DOCA_SUCCESS)
		result = register_flag("c", "count", "<COUNT>",
				       "exit after answering this many messages, once the client has "
				       "disconnected (default 1)",
				       DOCA_ARGP_TYPE_INT, count_flag);
	return result;
}

/* Waits up to timeout_ms on epoll_fd, which watches the receive channel, after arming it. */
static void wait_channel(struct doca_comm_channel_ep_t *ep, int epoll_fd, int timeout_ms)
{
	struct epoll_event event;

	if (doca_comm_channel_ep_event_handle_arm_recv(ep) != DOCA_SUCCESS)
		return;
	(void)epoll_wait(epoll_fd, &event, 1, timeout_ms);
}

static int epoll_on(doca_event_channel_t fd)
{
	struct epoll_event event = {.events = EPOLLIN, .data.fd = fd};
	int epoll_fd = epoll_create1(EPOLL_CLOEXEC);

	if (epoll_fd < 0)
		return -1;
	if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &event) != 0) {
		close(epoll_fd);
		return -1;
	}
	return epoll_fd;
}

/* Answers kept for one client whose send queue is full, oldest first. */
struct backlog {
	struct doca_comm_channel_addr_t *peer;
	struct backlog *next;
	uint32_t head;
	uint32_t count;
	bool dropping; /* logged once per run of dropped answers */
	size_t len[CC_BACKLOG];
	char msg[CC_BACKLOG][CC_MAX_MSG_SIZE];
};

struct service {
	struct doca_comm_channel_ep_t *ep;
	struct backlog *backlogs; /* the clients with answers waiting */
	uint64_t answered;
	bool client_left;
};

static struct backlog **find_backlog(struct service *svc, struct doca_comm_channel_addr_t *peer)
{
	struct backlog **at = &svc->backlogs;

	while (*at != NULL && (*at)->peer != peer)
		at = &(*at)->next;
	return at;
}

/*
 * Disconnects a client whose connection failed (it left or died, broke the protocol, or took
 * nothing for so long that the soft device aborted it), forgetting its waiting answers; the
 * others are served on. Only a failed disconnect ends the service.
 */
static doca_error_t drop_client(struct service *svc, struct doca_comm_channel_addr_t *peer,
				doca_error_t why)
{
	struct backlog **at = find_backlog(svc, peer);
	doca_error_t result;

	if (*at != NULL) {
		struct backlog *gone = *at;

		*at = gone->next;
		free(gone);
	}
	DOCA_LOG_INFO("a client is gone (%s): disconnecting it", doca_error_get_descr(why));
	svc->client_left = true;
	result = doca_comm_channel_ep_disconnect(svc->ep, peer);
	if (result != DOCA_SUCCESS)
		DOCA_LOG_ERR("cannot disconnect a client: %s", doca_error_get_descr(result));
	return result;
}

/*
 * Sends what waits for each client until its send queue is full again; a client whose
 * connection failed is dropped.
 */
static doca_error_t flush_backlogs(struct service *svc)
{
	struct backlog **at = &svc->backlogs;

	while (*at != NULL) {
		struct backlog *b = *at;
		doca_error_t result = DOCA_SUCCESS;

		while (b->count > 0) {
			result = doca_comm_channel_ep_sendto(svc->ep, b->msg[b->head], b->len[b->head],
							     DOCA_CC_MSG_FLAG_NONE, b->peer);
			if (result != DOCA_SUCCESS)
				break;
			b->head = (b->head + 1) % CC_BACKLOG;
			b->count--;
			svc->answered++;
		}
		if (result == DOCA_ERROR_AGAIN) {
			at = &b->next;
		} else if (result != DOCA_SUCCESS) {
			/* Unlinks b: *at is the next one. */
			result = drop_client(svc, b->peer, result);
			if (result != DOCA_SUCCESS)
				return result;
		} else {
			*at = b->next;
			free(b);
		}
	}
	return DOCA_SUCCESS;
}

/*
 * Answers peer without waiting on it: at once if its send queue has room, else behind what
 * already waits for it, up to CC_BACKLOG answers (more are dropped, with a log line).
 */
static doca_error_t answer(struct service *svc, struct doca_comm_channel_addr_t *peer, const void *msg,
			   size_t len)
{
	struct backlog **at = find_backlog(svc, peer);
	struct backlog *b = *at;
	doca_error_t result;
	uint32_t tail;

	if (b == NULL) {
		result = doca_comm_channel_ep_sendto(svc->ep, msg, len, DOCA_CC_MSG_FLAG_NONE, peer);
		if (result == DOCA_SUCCESS) {
			svc->answered++;
			return DOCA_SUCCESS;
		}
		if (result != DOCA_ERROR_AGAIN)
			return drop_client(svc, peer, result);
		b = calloc(1, sizeof(*b));
		if (b == NULL) {
			DOCA_LOG_WARN("no memory to keep an answer for a busy client: dropped");
			return DOCA_SUCCESS;
		}
		b->peer = peer;
		*at = b;
	}
	if (b->count == CC_BACKLOG) {
		if (!b->dropping)
			DOCA_LOG_WARN("a client takes no answers (%d wait already): dropping more until it does",
				      CC_BACKLOG);
		b->dropping = true;
		return DOCA_SUCCESS;
	}
	b->dropping = false;
	tail = (b->head + b->count) % CC_BACKLOG;
	memcpy(b->msg[tail], msg, len);
	b->len[tail] = len;
	b->count++;
	return DOCA_SUCCESS;
}

static doca_error_t serve(const struct comch_flags *cfg, struct doca_comm_channel_ep_t *ep,
			  uint64_t *answered)
{
	struct service svc = {.ep = ep};
	char msg[CC_MAX_MSG_SIZE];
	doca_event_channel_t send_fd, recv_fd;
	int recv_epoll;
	double idle_since = now_sec();
	doca_error_t result = doca_comm_channel_ep_get_event_channel(ep, &send_fd, &recv_fd);

	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot get the event channels: %s", doca_error_get_descr(result));
		return result;
	}
	recv_epoll = epoll_on(recv_fd);
	if (recv_epoll < 0) {
		DOCA_LOG_ERR("cannot wait on the event channel: %s", strerror(errno));
		return DOCA_ERROR_OPERATING_SYSTEM;
	}
	while (!stop && !(svc.client_left && svc.answered >= (uint64_t)cfg->count)) {
		struct doca_comm_channel_addr_t *peer = NULL;
		size_t len = sizeof(msg);

		result = flush_backlogs(&svc);
		if (result != DOCA_SUCCESS)
			break;
		result = doca_comm_channel_ep_recvfrom(ep, msg, &len, DOCA_CC_MSG_FLAG_NONE, &peer);
		if (result == DOCA_ERROR_AGAIN) {
			if (now_sec() - idle_since > CC_IDLE_TIMEOUT_SEC) {
				DOCA_LOG_ERR("no message for %d s", CC_IDLE_TIMEOUT_SEC);
				result = DOCA_ERROR_TIME_OUT;
				break;
			}
			/* Answers waiting for busy clients are retried soon. */
			wait_channel(ep, recv_epoll, svc.backlogs != NULL ? CC_RETRY_MS : 100);
			continue;
		}
		idle_since = now_sec();
		if (result != DOCA_SUCCESS && peer != NULL) {
			/* That client's connection failed; the others are served on. */
			result = drop_client(&svc, peer, result);
			if (result != DOCA_SUCCESS)
				break;
			continue;
		}
		if (result != DOCA_SUCCESS) {
			DOCA_LOG_ERR("cannot receive: %s", doca_error_get_descr(result));
			break;
		}
		if (cfg->text[0] != '\0')
			result = answer(&svc, peer, cfg->text, strlen(cfg->text) + 1);
		else
			result = answer(&svc, peer, msg, len);
		if (result != DOCA_SUCCESS)
			break;
	}
	if (stop && result == DOCA_SUCCESS)
		result = DOCA_ERROR_AGAIN;
	while (svc.backlogs != NULL) {
		struct backlog *next = svc.backlogs->next;

		free(svc.backlogs);
		svc.backlogs = next;
	}
	*answered = svc.answered;
	close(recv_epoll);
	return result;
}

int main(int argc, char **argv)
{
	struct comch_flags cfg = {
		.pci_addr = "03:00.0",
		.rep_pci_addr = "b1:00.0",
		.server_name = "dpakit_cc",
		.count = 1,
		.min_count = 0,
	};
	struct doca_dev *dev = NULL;
	struct doca_dev_rep *rep = NULL;
	struct doca_comm_channel_ep_t *ep = NULL;
	uint64_t answered = 0;
	doca_error_t result;
	int exit_status = EXIT_FAILURE;

	if (comch_parse_flags("comm_channel_server", &cfg, register_flags, argc, argv) != DOCA_SUCCESS)
		return EXIT_FAILURE;

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);

	if (open_device(cfg.pci_addr, doca_comch_cap_server_is_supported, "a Comm Channel service (give the Arm-side device)", &dev) != DOCA_SUCCESS)
		goto argp_destroy;
	if (open_representor(dev, cfg.rep_pci_addr, &rep) != DOCA_SUCCESS)
		goto dev_close;
	result = doca_comm_channel_ep_create(&ep);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot create an endpoint: %s", doca_error_get_descr(result));
		goto rep_close;
	}
	result = doca_comm_channel_ep_set_device(ep, dev);
	if (result == DOCA_SUCCESS)
		result = doca_comm_channel_ep_set_device_rep(ep, rep);
	if (result == DOCA_SUCCESS)
		result = doca_comm_channel_ep_set_max_msg_size(ep, CC_MAX_MSG_SIZE);
	if (result == DOCA_SUCCESS)
		result = doca_comm_channel_ep_set_send_queue_size(ep, CC_QUEUE_SIZE);
	if (result == DOCA_SUCCESS)
		result = doca_comm_channel_ep_set_recv_queue_size(ep, CC_QUEUE_SIZE);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot configure the endpoint: %s", doca_error_get_descr(result));
		goto ep_destroy;
	}
	result = doca_comm_channel_ep_listen(ep, cfg.server_name);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot listen as %s: %s", cfg.server_name, doca_error_get_descr(result));
		goto ep_destroy;
	}
	DOCA_LOG_INFO("listening as %s", cfg.server_name);

	result = serve(&cfg, ep, &answered);
	DOCA_LOG_INFO("%lu messages answered", (unsigned long)answered);
	if (result == DOCA_SUCCESS)
		exit_status = EXIT_SUCCESS;

ep_destroy:
	if (doca_comm_channel_ep_destroy(ep) != DOCA_SUCCESS)
		exit_status = EXIT_FAILURE;
rep_close:
	if (doca_dev_rep_close(rep) != DOCA_SUCCESS)
		exit_status = EXIT_FAILURE;
dev_close:
	if (doca_dev_close(dev) != DOCA_SUCCESS)
		exit_status = EXIT_FAILURE;
argp_destroy:
	doca_argp_destroy();
	return exit_status;
}
