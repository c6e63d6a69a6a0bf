//! The soft device's documented limits, one definition for the soft device and its transport
//! (docs/comch.md lists the per-peer ones).
//!
//! Capability queries (`cap_*`) answer with these values and every configuration call checks
//! against them, so a program that fits the soft device fits the numbers it was told. They are
//! `usize` so they index and size tables directly; queries that DOCA types as `uint32_t` convert.

/// Largest immediate a MsgQ producer sends or a consumer receives, in bytes
/// (`doca_comch_consumer_cap_get_max_imm_data_len`). One immediate travels in one cache line.
pub const MAX_IMM_DATA_LEN: usize = crate::MAX_IMM_DATA_LEN;

/// Most consumers one MsgQ may create (`doca_comch_msgq_set_max_num_consumers` upper bound).
pub const MSGQ_MAX_NUM_CONSUMERS: usize = 64;

/// Most producers one MsgQ may create (`doca_comch_msgq_set_max_num_producers` upper bound).
pub const MSGQ_MAX_NUM_PRODUCERS: usize = 64;

/// Most receives a DPA consumer may have posted (`doca_comch_consumer_set_dev_num_recv`), and
/// most receives across the consumers of one consumer completion context
/// (`doca_comch_consumer_completion_set_max_num_recv`). Sizes the receive ring.
pub const CONSUMER_MAX_NUM_RECV: usize = 8192;

/// Most sends a DPA producer may have outstanding (`doca_comch_producer_set_dev_num_send`).
pub const PRODUCER_MAX_NUM_SEND: usize = 8192;

/// Largest task pool of a CPU producer or consumer (`*_task_send_set_conf`,
/// `*_task_post_recv_set_conf`); answered by `doca_comch_{producer,consumer}_cap_get_max_num_tasks`.
pub const CPU_MAX_NUM_TASKS: usize = 65536;

/// DPA cores of the soft BlueField-3 (`doca_dpa_get_core_num`).
pub const DPA_NUM_CORES: usize = 16;

/// Execution units (hardware threads) per DPA core (`doca_dpa_get_num_eus_per_core`).
pub const DPA_THREADS_PER_CORE: usize = 16;

/// Most DPA threads one DPA context may create; one per EU (cores × EUs per core).
pub const DPA_MAX_THREADS: usize = 256;
/// Sync events one DPA context may hold handles of (`doca_sync_event_get_dpa_handle`).
pub const DPA_MAX_SYNC_EVENTS: usize = 4096;

/// Most threads one kernel launch runs on (`doca_dpa_get_max_threads_per_kernel`): the soft
/// device runs each on a host thread of its own.
pub const DPA_MAX_THREADS_PER_KERNEL: usize = 64;

/// How long, in seconds, a launched kernel may run (`doca_dpa_get_kernel_max_run_time`): past
/// it the DPA context fails, as the device kills a kernel that overstays.
pub const DPA_KERNEL_MAX_RUN_TIME_SECS: u64 = 12;

/// Kernel launches one DPA context holds queued (waiting for their event or for the launch
/// ahead); one more answers `DOCA_ERROR_AGAIN`.
pub const DPA_MAX_QUEUED_LAUNCHES: usize = 1024;

/// Completion contexts (consumer completions and DPA completions) one DPA thread can have
/// attached at once, in every scheduling mode (`dpakit_soft_dpa_get_max_completions_per_thread`).
pub const DPA_THREAD_MAX_COMPLETIONS: usize = 8;

/// Largest DPA completion queue (`doca_dpa_completion_create` queue size).
pub const DPA_COMPLETION_MAX_QUEUE_SIZE: usize = 65536;

/// Device memory the soft DPA allocates in total across `doca_dpa_mem_alloc` calls, in bytes
/// (256 MiB). Past it, allocation fails with `NO_MEMORY` as on a full device heap.
pub const DPA_MAX_MEMORY: usize = 256 << 20;

/// Largest memory range one mmap may register (`doca_mmap_set_memrange`), in bytes (1 GiB).
pub const MMAP_MAX_LEN: usize = 1 << 30;

/// Most elements one buffer inventory may hold (`doca_buf_inventory_create`). Elements are
/// preallocated, so this also bounds the inventory's memory.
pub const BUF_INVENTORY_MAX_ELEMENTS: usize = 1 << 20;

/// Longest Comch server name, in bytes including the terminating NUL
/// (`doca_comch_cap_get_max_name_len`); a name has at least one character.
pub const COMCH_MAX_NAME_LEN: usize = 120;

/// Largest control-path message, in bytes (`doca_comch_cap_get_max_msg_size`); also the
/// default a server and a client use, so both agree unless one is configured otherwise.
pub const COMCH_MAX_MSG_SIZE: usize = 4080;

/// Deepest control-path receive queue (`doca_comch_cap_get_max_recv_queue_size`): the most
/// messages one connection delivers per progress.
pub const COMCH_MAX_RECV_QUEUE_SIZE: usize = 8192;

/// Receive queue depth of a server or client that sets none.
pub const COMCH_DEFAULT_RECV_QUEUE_SIZE: usize = 128;

/// Most clients connected to one server at a time (`doca_comch_cap_get_max_clients`).
pub const COMCH_MAX_CLIENTS: usize = 512;

/// Largest send-task pool of a server or client (`doca_comch_cap_get_max_send_tasks`). At
/// least what programs written for BlueField hardware ask for (pools of 10,240 are seen);
/// tasks are preallocated, so this bounds their memory too.
pub const COMCH_MAX_SEND_TASKS: usize = 65536;

/// Most connections a server holds in their handshake (accepted, no valid HELLO yet). Past it
/// the oldest is dropped: silent connections cannot crowd out clients that speak at once.
pub const COMCH_MAX_PENDING_HANDSHAKES: usize = 64;

/// How long an accepted connection may take to send its HELLO, in milliseconds.
pub const COMCH_HANDSHAKE_TIMEOUT_MS: u64 = 1000;

/// Most consumers one side of a connection may announce to the other (fast path). Each costs
/// the peer two mappings and a descriptor, so a server's worst case stays within the
/// process's limits.
pub const COMCH_MAX_CONSUMERS_PER_CONNECTION: usize = 32;

/// Most memory the consumers one side of a connection announces may share with the peer, in
/// bytes (4 GiB); each consumer shares its mmap (at most [`MMAP_MAX_LEN`]) plus its ring.
pub const COMCH_MAX_SHARED_BYTES_PER_CONNECTION: u64 = 4 << 30;

/// How long a fast-path consumer may take to announce itself to its peer (its connection's
/// socket full all along) before its start fails, in milliseconds.
pub const COMCH_ANNOUNCE_TIMEOUT_MS: u64 = 1000;

/// Most slots of a connection's control ring, one per direction (each side's ring is its
/// receive queue size rounded up to a power of two, at most this): with 4,080-byte messages a
/// ring is at most 1 MiB, and a server maps at most one per client.
pub const COMCH_CTRL_RING_MAX_DEPTH: usize = 256;

/// Most descriptors one Comch server (or client) keeps open for its peers' consumers (one
/// wake-up each), and at most a quarter of the process's `RLIMIT_NOFILE`: past it an
/// announcement is refused with `FULL` and its connection dropped, before the process's
/// descriptor table can fill.
pub const COMCH_MAX_PEER_DESCRIPTORS: usize = 4096;

/// How long a Comch peer may take nothing while sends to it are outstanding (a control message
/// in its ring or waiting for room; a fast-path send waiting for a posted receive) before its
/// connection is dropped and those sends fail with `CONNECTION_ABORTED`. A live peer takes a
/// message within a progress pass; two seconds is far beyond any pause of a program that still
/// runs, and short enough that a stuck or hostile peer frees what it holds.
pub const COMCH_PEER_STALL_TIMEOUT_MS: u64 = 2000;

/// Smallest maximal message size of a legacy Comm Channel endpoint, in bytes; smaller requests
/// are raised to it.
pub const COMM_CHANNEL_MIN_MSG_SIZE: usize = 256;

/// Largest maximal message size of a legacy Comm Channel endpoint, in bytes.
pub const COMM_CHANNEL_MAX_MSG_SIZE: usize = 4080;

/// Smallest queue size of a legacy Comm Channel endpoint, in messages; smaller requests are
/// raised to it.
pub const COMM_CHANNEL_MIN_QUEUE_SIZE: usize = 16;

/// Largest queue size of a legacy Comm Channel endpoint, in messages.
pub const COMM_CHANNEL_MAX_QUEUE_SIZE: usize = 8191;

/// Longest legacy Comm Channel service name, in bytes including the terminating NUL
/// (`doca_comm_channel_get_max_service_name_len`); a name has at least one character.
pub const COMM_CHANNEL_MAX_SERVICE_NAME_LEN: usize = 120;

/// Most connections one legacy Comm Channel service serves at once
/// (`doca_comm_channel_get_service_max_num_connections`); more clients are refused.
pub const COMM_CHANNEL_SERVICE_MAX_CONNECTIONS: usize = 512;

/// Passes a legacy Comm Channel endpoint makes over its ready sockets (at most 64 a pass) in
/// one call at most: what is still ready waits for the program's next call, so no call runs for
/// as long as peers keep writing.
pub const COMM_CHANNEL_PASSES_PER_CALL: usize = 4;

/// Frames a legacy Comm Channel endpoint reads from one connection in one pass at most: a peer
/// that writes without end (credits of count 0, say) costs a call this many frames a pass, and
/// the other connections are served in between.
pub const COMM_CHANNEL_FRAMES_PER_PASS: usize = 64;

/// How long a legacy Comm Channel peer may leave this side with no room for a message to it
/// (every credit in flight, or its socket full) without returning a credit, in milliseconds:
/// then its connection is aborted (`CONNECTION_ABORTED`). A live program takes a message within
/// milliseconds of its arrival, even under valgrind; one that takes none for 2 s while its
/// sender waits has stopped, and holds that sender's share of its queue for nothing.
pub const COMM_CHANNEL_PEER_STALL_TIMEOUT_MS: u64 = 2000;

/// Most tasks of one kind a sync event context holds (`doca_sync_event_task_*_set_conf`'s
/// `num_tasks`, for each of get, notify_set, notify_add, wait_eq and wait_neq).
pub const SYNC_EVENT_MAX_TASKS: usize = 65536;

/// Most sync events one process shares with the remote PCI side at once: each keeps its counter
/// in a memory file it holds open until it is destroyed, so the cap (and at most a quarter of
/// the process's `RLIMIT_NOFILE`) leaves the descriptor table to the program. Past it,
/// `doca_sync_event_export_to_remote_pci` answers `NO_MEMORY`.
pub const SYNC_EVENT_MAX_EXPORTED: usize = 1024;

/// Most blobs one sync event hands out (one per device it is exported through, each valid until
/// the event is destroyed); past it, `NO_MEMORY`.
pub const SYNC_EVENT_MAX_EXPORTS_PER_EVENT: usize = 8;

/// Most events one process imports from the remote PCI side at once
/// (`doca_sync_event_create_from_export`), each one page mapped; past it, `NO_MEMORY`.
pub const SYNC_EVENT_MAX_IMPORTED: usize = 4096;

/// How often a sleeping progress engine with wait tasks of a sync event submitted wakes to look
/// at the counter again, in microseconds: the counter changes with no signal (another thread, or
/// the remote side's process, writes it), so a sleeping engine looks on a timer meanwhile.
pub const SYNC_EVENT_WAIT_RECHECK_US: u64 = 200;

// Relations the numbers must keep.
const _: () = assert!(DPA_NUM_CORES * DPA_THREADS_PER_CORE == DPA_MAX_THREADS);
const _: () = assert!(COMM_CHANNEL_MIN_MSG_SIZE < COMM_CHANNEL_MAX_MSG_SIZE);
const _: () = assert!(COMM_CHANNEL_MIN_QUEUE_SIZE < COMM_CHANNEL_MAX_QUEUE_SIZE);
