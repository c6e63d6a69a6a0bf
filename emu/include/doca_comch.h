/*
 * dpakit soft device: DOCA Comch, the communication channel between host, Arm and DPA.
 *
 * This header holds what every Comch object shares. The queues between the CPU and the DPA are
 * in doca_comch_msgq.h, their endpoints in doca_comch_consumer.h and doca_comch_producer.h.
 */
#ifndef DOCA_COMCH_H
#define DOCA_COMCH_H

#include <stdint.h>
#include <doca_compat.h>
#include <doca_error.h>
#include <doca_types.h>
#include <doca_dev.h>
#include <doca_ctx.h>
#include <doca_pe.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A connection between a Comch client and server. */
struct doca_comch_connection;

#ifdef __cplusplus
}
#endif

#endif /* DOCA_COMCH_H */
