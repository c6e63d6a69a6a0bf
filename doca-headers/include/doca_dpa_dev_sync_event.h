/*
 * dpakit soft device: the DPA device API, sync events.
 *
 * A kernel reaches a sync event through the handle the host exported with
 * doca_sync_event_get_dpa_handle (a doca_dpa_dev_sync_event_t, passed as a kernel argument).
 */
#ifndef DOCA_DPA_DEV_SYNC_EVENT_H
#define DOCA_DPA_DEV_SYNC_EVENT_H

#include <stdint.h>
#include <doca_types.h>
#include <doca_dpa_dev.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Stores the event's counter in *value. */
void doca_dpa_dev_sync_event_get(doca_dpa_dev_sync_event_t dpa_dev_se_handle, uint64_t *value);

/* Adds value to the counter, atomically. */
void doca_dpa_dev_sync_event_update_add(doca_dpa_dev_sync_event_t dpa_dev_se_handle, uint64_t value);

/* Sets the counter to value. */
void doca_dpa_dev_sync_event_update_set(doca_dpa_dev_sync_event_t dpa_dev_se_handle, uint64_t value);

/* Busy-waits until (counter & mask) > value. */
void doca_dpa_dev_sync_event_wait_gt(doca_dpa_dev_sync_event_t dpa_dev_se_handle, uint64_t value,
				     uint64_t mask);

#ifdef __cplusplus
}
#endif

#endif /* DOCA_DPA_DEV_SYNC_EVENT_H */
