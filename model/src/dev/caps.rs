//! The `*_cap_*` queries of a device: DOCA passes a `doca_devinfo` to each, and each answers
//! from the device's capabilities and [`crate::limits`].

use super::*;

impl Devinfo {
    // --- DPA -----------------------------------------------------------------------------------

    /// `doca_dpa_cap_is_supported`: `Ok` when the device exposes a DPA, `NOT_SUPPORTED` otherwise.
    pub fn dpa_cap_is_supported(&self) -> Result<()> {
        if self.caps().dpa {
            Ok(())
        } else {
            Err(not_supported(
                self,
                "DOCA DPA",
                "the device has no DPA; pick a device for which dpa_cap_is_supported() is Ok",
            ))
        }
    }

    /// `doca_dpa_get_core_num`, answered for the device: DPA cores.
    pub fn dpa_get_core_num(&self) -> Result<u32> {
        self.dpa_cap_is_supported()
            .map(|()| cap_u32(limits::DPA_NUM_CORES))
    }

    /// `doca_dpa_get_num_eus_per_core`, answered for the device: execution units per core.
    pub fn dpa_get_num_eus_per_core(&self) -> Result<u32> {
        self.dpa_cap_is_supported()
            .map(|()| cap_u32(limits::DPA_THREADS_PER_CORE))
    }

    /// `doca_dpa_get_total_num_eus_available`, answered for the device.
    pub fn dpa_get_total_num_eus_available(&self) -> Result<u32> {
        self.dpa_cap_is_supported()
            .map(|()| cap_u32(limits::DPA_NUM_CORES * limits::DPA_THREADS_PER_CORE))
    }

    /// Soft-device query (no DOCA equivalent): most DPA threads one DPA context may create.
    pub fn dpa_cap_get_max_threads(&self) -> Result<u32> {
        self.dpa_cap_is_supported()
            .map(|()| cap_u32(limits::DPA_MAX_THREADS))
    }

    /// Soft-device query (no DOCA equivalent): largest DPA completion queue.
    pub fn dpa_cap_get_max_completion_queue_size(&self) -> Result<u32> {
        self.dpa_cap_is_supported()
            .map(|()| cap_u32(limits::DPA_COMPLETION_MAX_QUEUE_SIZE))
    }

    /// Soft-device query (no DOCA equivalent): DPA device memory available in total, in bytes.
    pub fn dpa_cap_get_max_memory(&self) -> Result<u64> {
        self.dpa_cap_is_supported()
            .map(|()| limits::DPA_MAX_MEMORY as u64)
    }

    // --- Comch control path --------------------------------------------------------------------

    /// `doca_comch_cap_server_is_supported`: servers run on the Arm side.
    pub fn comch_cap_server_is_supported(&self) -> Result<()> {
        if !self.caps().comch {
            return Err(not_supported(
                self,
                "a Comch server",
                "the device has no Comch",
            ));
        }
        match self.side() {
            Side::Arm => Ok(()),
            Side::Host => Err(not_supported(
                self,
                "a Comch server",
                "servers run on the BlueField Arm side; create a client here instead",
            )),
        }
    }

    /// `doca_comch_cap_client_is_supported`: clients run on the host side.
    pub fn comch_cap_client_is_supported(&self) -> Result<()> {
        if !self.caps().comch {
            return Err(not_supported(
                self,
                "a Comch client",
                "the device has no Comch",
            ));
        }
        match self.side() {
            Side::Host => Ok(()),
            Side::Arm => Err(not_supported(
                self,
                "a Comch client",
                "clients run on the host side; create a server here instead",
            )),
        }
    }

    // --- Comch fast path -----------------------------------------------------------------------

    pub(super) fn fast_path(&self, what: &str) -> Result<()> {
        if self.caps().comch_fast_path {
            Ok(())
        } else {
            Err(not_supported(
                self,
                what,
                "the device has no Comch fast path (producer/consumer)",
            ))
        }
    }

    /// `doca_comch_producer_cap_is_supported`.
    pub fn comch_producer_cap_is_supported(&self) -> Result<()> {
        self.fast_path("a Comch producer")
    }

    /// `doca_comch_consumer_cap_is_supported`.
    pub fn comch_consumer_cap_is_supported(&self) -> Result<()> {
        self.fast_path("a Comch consumer")
    }

    /// `doca_comch_producer_cap_get_max_num_tasks`: largest send task pool of a CPU producer.
    pub fn comch_producer_cap_get_max_num_tasks(&self) -> Result<u32> {
        self.fast_path("a Comch producer")
            .map(|()| cap_u32(limits::CPU_MAX_NUM_TASKS))
    }

    /// `doca_comch_consumer_cap_get_max_num_tasks`: largest post-receive task pool of a CPU consumer.
    pub fn comch_consumer_cap_get_max_num_tasks(&self) -> Result<u32> {
        self.fast_path("a Comch consumer")
            .map(|()| cap_u32(limits::CPU_MAX_NUM_TASKS))
    }

    /// `doca_comch_consumer_cap_get_max_imm_data_len`: bytes of immediate data per message.
    pub fn comch_consumer_cap_get_max_imm_data_len(&self) -> Result<u32> {
        self.fast_path("a Comch consumer")
            .map(|()| cap_u32(limits::MAX_IMM_DATA_LEN))
    }

    /// `doca_comch_consumer_cap_get_max_consumers`: consumers per connection (the MsgQ limit).
    pub fn comch_consumer_cap_get_max_consumers(&self) -> Result<u32> {
        self.fast_path("a Comch consumer")
            .map(|()| cap_u32(limits::MSGQ_MAX_NUM_CONSUMERS))
    }

    /// `doca_comch_producer_cap_get_max_producers`: producers per connection (the MsgQ limit).
    pub fn comch_producer_cap_get_max_producers(&self) -> Result<u32> {
        self.fast_path("a Comch producer")
            .map(|()| cap_u32(limits::MSGQ_MAX_NUM_PRODUCERS))
    }

    /// Soft-device query (no DOCA equivalent): largest `doca_comch_consumer_set_dev_num_recv`.
    pub fn comch_consumer_cap_get_max_dev_num_recv(&self) -> Result<u32> {
        self.comch_msgq_cap_is_supported()
            .map(|()| cap_u32(limits::CONSUMER_MAX_NUM_RECV))
    }

    /// Soft-device query (no DOCA equivalent): largest
    /// `doca_comch_consumer_completion_set_max_num_recv`.
    pub fn comch_consumer_completion_cap_get_max_num_recv(&self) -> Result<u32> {
        self.comch_msgq_cap_is_supported()
            .map(|()| cap_u32(limits::CONSUMER_MAX_NUM_RECV))
    }

    /// Soft-device query (no DOCA equivalent): largest `doca_comch_producer_set_dev_num_send`.
    pub fn comch_producer_cap_get_max_dev_num_send(&self) -> Result<u32> {
        self.comch_msgq_cap_is_supported()
            .map(|()| cap_u32(limits::PRODUCER_MAX_NUM_SEND))
    }

    // --- MsgQ ----------------------------------------------------------------------------------

    /// Soft-device query (DOCA's MsgQ header has no cap function): `Ok` when the device supports
    /// Comch MsgQ, which needs a DPA.
    pub fn comch_msgq_cap_is_supported(&self) -> Result<()> {
        let caps = self.caps();
        if !caps.dpa {
            return Err(not_supported(
                self,
                "Comch MsgQ",
                "a MsgQ connects the CPU with the DPA and the device has no DPA",
            ));
        }
        if !caps.msgq {
            return Err(not_supported(
                self,
                "Comch MsgQ",
                "the device has no MsgQ support",
            ));
        }
        Ok(())
    }

    /// Soft-device query: largest `doca_comch_msgq_set_max_num_consumers`.
    pub fn comch_msgq_cap_get_max_num_consumers(&self) -> Result<u32> {
        self.comch_msgq_cap_is_supported()
            .map(|()| cap_u32(limits::MSGQ_MAX_NUM_CONSUMERS))
    }

    /// Soft-device query: largest `doca_comch_msgq_set_max_num_producers`.
    pub fn comch_msgq_cap_get_max_num_producers(&self) -> Result<u32> {
        self.comch_msgq_cap_is_supported()
            .map(|()| cap_u32(limits::MSGQ_MAX_NUM_PRODUCERS))
    }

    // --- mmap ----------------------------------------------------------------------------------

    /// `doca_mmap_cap_is_export_pci_supported`.
    pub fn mmap_cap_is_export_pci_supported(&self) -> Result<bool> {
        Ok(self.caps().mmap_export_pci)
    }

    /// `doca_mmap_cap_is_create_from_export_pci_supported`.
    pub fn mmap_cap_is_create_from_export_pci_supported(&self) -> Result<bool> {
        Ok(self.caps().mmap_create_from_export_pci)
    }

    /// Soft-device query: largest `doca_mmap_set_memrange` length.
    pub fn mmap_cap_get_max_len(&self) -> Result<u64> {
        Ok(limits::MMAP_MAX_LEN as u64)
    }
}
