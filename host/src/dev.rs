//! Devices (`doca_devinfo`, `doca_dev`): list them, pick one by PCI address or capability,
//! open it.

use crate::error::{Error, Result, bail, doca};
use dpakit_abi::ErrorCode;
use dpakit_sys as sys;
use std::ffi::{CStr, CString, c_char};
use std::fmt;
use std::marker::PhantomData;
use std::rc::Rc;

/// `doca_devinfo_create_list`: a snapshot of the devices this process sees.
#[doc(alias = "doca_devinfo_create_list")]
pub struct DevList {
    raw: *mut *mut sys::doca_devinfo,
    len: u32,
}

impl fmt::Debug for DevList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl DevList {
    /// Lists the devices.
    pub fn new() -> Result<Self> {
        let mut raw = std::ptr::null_mut();
        let mut len = 0;
        doca!(doca_devinfo_create_list(&mut raw, &mut len))?;
        Ok(Self { raw, len })
    }

    /// The devices, in DOCA's order.
    pub fn iter(&self) -> impl Iterator<Item = Devinfo<'_>> + '_ {
        (0..self.len as usize).map(move |i| Devinfo {
            // SAFETY: `raw` holds `len` devinfo pointers while the list lives.
            raw: unsafe { *self.raw.add(i) },
            _list: PhantomData,
        })
    }

    /// The first device `pick` accepts.
    pub fn find(&self, mut pick: impl FnMut(&Devinfo<'_>) -> bool) -> Option<Devinfo<'_>> {
        self.iter().find(|d| pick(d))
    }
}

impl Drop for DevList {
    #[doc(alias = "doca_devinfo_destroy_list")]
    fn drop(&mut self) {
        // Opened devices stay valid; nothing else can fail here.
        let _ = doca!(doca_devinfo_destroy_list(self.raw));
    }
}

/// `doca_devinfo`: a device before it is opened. Borrowed from a [`DevList`] or a [`Dev`].
#[derive(Clone, Copy)]
pub struct Devinfo<'a> {
    raw: *mut sys::doca_devinfo,
    _list: PhantomData<&'a DevList>,
}

impl fmt::Debug for Devinfo<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Devinfo")
            .field("ibdev_name", &self.ibdev_name().unwrap_or_default())
            .field("iface_name", &self.iface_name().unwrap_or_default())
            .finish()
    }
}

fn c_string(
    api: &'static str,
    size: usize,
    f: impl FnOnce(*mut c_char, u32) -> sys::doca_error_t,
) -> Result<String> {
    let mut buf = vec![0u8; size];
    crate::error::check(api, f(buf.as_mut_ptr().cast(), size as u32))?;
    Ok(CStr::from_bytes_until_nul(&buf)
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default())
}

fn c_arg(s: &str, what: &str) -> Result<CString> {
    CString::new(s).map_err(|_| {
        Error::new(
            ErrorCode::InvalidValue,
            format!("{what} `{s}` contains a NUL byte"),
        )
    })
}

impl Devinfo<'_> {
    /// `doca_devinfo_is_equal_pci_addr`: whether the device is at `pci_addr` (`BB:DD.F` or
    /// `DDDD:BB:DD.F`).
    #[doc(alias = "doca_devinfo_is_equal_pci_addr")]
    pub fn is_equal_pci_addr(&self, pci_addr: &str) -> Result<bool> {
        let addr = c_arg(pci_addr, "PCI address")?;
        let mut equal = 0u8;
        doca!(doca_devinfo_is_equal_pci_addr(
            self.raw,
            addr.as_ptr(),
            &mut equal
        ))?;
        Ok(equal != 0)
    }

    /// `doca_devinfo_get_pci_addr_str`: `DDDD:BB:DD.F`.
    #[doc(alias = "doca_devinfo_get_pci_addr_str")]
    pub fn pci_addr_str(&self) -> Result<String> {
        c_string(
            "doca_devinfo_get_pci_addr_str",
            sys::DOCA_DEVINFO_PCI_ADDR_SIZE as usize,
            // SAFETY: a live devinfo and a buffer of DOCA_DEVINFO_PCI_ADDR_SIZE bytes, the
            // size the function writes at most.
            |buf, _| unsafe { sys::doca_devinfo_get_pci_addr_str(self.raw, buf) },
        )
    }

    /// `doca_devinfo_get_ibdev_name`.
    #[doc(alias = "doca_devinfo_get_ibdev_name")]
    pub fn ibdev_name(&self) -> Result<String> {
        c_string(
            "doca_devinfo_get_ibdev_name",
            sys::DOCA_DEVINFO_IBDEV_NAME_SIZE as usize,
            // SAFETY: a live devinfo and a buffer of the size passed.
            |buf, n| unsafe { sys::doca_devinfo_get_ibdev_name(self.raw, buf, n) },
        )
    }

    /// `doca_devinfo_get_iface_name`.
    #[doc(alias = "doca_devinfo_get_iface_name")]
    pub fn iface_name(&self) -> Result<String> {
        c_string(
            "doca_devinfo_get_iface_name",
            sys::DOCA_DEVINFO_IFACE_NAME_SIZE as usize,
            // SAFETY: a live devinfo and a buffer of the size passed.
            |buf, n| unsafe { sys::doca_devinfo_get_iface_name(self.raw, buf, n) },
        )
    }

    /// `doca_dpa_cap_is_supported`: `Ok` if the device has a DPA.
    #[doc(alias = "doca_dpa_cap_is_supported")]
    pub fn dpa_cap_is_supported(&self) -> Result<()> {
        doca!(doca_dpa_cap_is_supported(self.raw))
    }

    /// `doca_comch_producer_cap_is_supported`.
    #[doc(alias = "doca_comch_producer_cap_is_supported")]
    pub fn comch_producer_cap_is_supported(&self) -> Result<()> {
        doca!(doca_comch_producer_cap_is_supported(self.raw))
    }

    /// `doca_comch_consumer_cap_is_supported`.
    #[doc(alias = "doca_comch_consumer_cap_is_supported")]
    pub fn comch_consumer_cap_is_supported(&self) -> Result<()> {
        doca!(doca_comch_consumer_cap_is_supported(self.raw))
    }

    /// `doca_comch_producer_cap_get_max_num_tasks`.
    #[doc(alias = "doca_comch_producer_cap_get_max_num_tasks")]
    pub fn comch_producer_cap_get_max_num_tasks(&self) -> Result<u32> {
        let mut n = 0;
        doca!(doca_comch_producer_cap_get_max_num_tasks(self.raw, &mut n))?;
        Ok(n)
    }

    /// `doca_comch_consumer_cap_get_max_num_tasks`.
    #[doc(alias = "doca_comch_consumer_cap_get_max_num_tasks")]
    pub fn comch_consumer_cap_get_max_num_tasks(&self) -> Result<u32> {
        let mut n = 0;
        doca!(doca_comch_consumer_cap_get_max_num_tasks(self.raw, &mut n))?;
        Ok(n)
    }

    /// `doca_dma_cap_task_memcpy_is_supported`: `Ok` if the device's DMA engine takes memcpy
    /// tasks ([`Dma`](crate::dma::Dma)).
    #[doc(alias = "doca_dma_cap_task_memcpy_is_supported")]
    pub fn dma_cap_task_memcpy_is_supported(&self) -> Result<()> {
        doca!(doca_dma_cap_task_memcpy_is_supported(self.raw))
    }

    /// `doca_dma_cap_task_memcpy_get_max_buf_size`: the most bytes one memcpy task copies.
    #[doc(alias = "doca_dma_cap_task_memcpy_get_max_buf_size")]
    pub fn dma_cap_task_memcpy_get_max_buf_size(&self) -> Result<u64> {
        let mut n = 0;
        doca!(doca_dma_cap_task_memcpy_get_max_buf_size(self.raw, &mut n))?;
        Ok(n)
    }

    /// `doca_dma_cap_task_memcpy_get_max_buf_list_len`: the most buffers one memcpy task takes.
    #[doc(alias = "doca_dma_cap_task_memcpy_get_max_buf_list_len")]
    pub fn dma_cap_task_memcpy_get_max_buf_list_len(&self) -> Result<u32> {
        let mut n = 0;
        doca!(doca_dma_cap_task_memcpy_get_max_buf_list_len(
            self.raw, &mut n
        ))?;
        Ok(n)
    }
}

struct DevInner {
    raw: *mut sys::doca_dev,
}

impl Drop for DevInner {
    #[doc(alias = "doca_dev_close")]
    fn drop(&mut self) {
        // Everything created on the device holds a clone of it, so it closes last.
        let _ = doca!(doca_dev_close(self.raw));
    }
}

/// `doca_dev`: an open device. Clones share it; it closes when the last clone (and everything
/// created on it, which keeps a clone) is gone.
#[derive(Clone)]
pub struct Dev {
    inner: Rc<DevInner>,
}

impl fmt::Debug for Dev {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Dev").field(&self.as_devinfo()).finish()
    }
}

impl Dev {
    /// `doca_dev_open`.
    #[doc(alias = "doca_dev_open")]
    pub fn open(devinfo: &Devinfo<'_>) -> Result<Dev> {
        let mut raw = std::ptr::null_mut();
        doca!(doca_dev_open(devinfo.raw, &mut raw))?;
        Ok(Dev {
            inner: Rc::new(DevInner { raw }),
        })
    }

    /// Opens the device at `pci_addr` (`BB:DD.F` or `DDDD:BB:DD.F`): the "list, compare the
    /// PCI address, open" loop of DOCA programs. `NOT_FOUND` naming the devices present when
    /// none is there.
    pub fn open_by_pci(pci_addr: &str) -> Result<Dev> {
        let list = DevList::new()?;
        for info in list.iter() {
            if info.is_equal_pci_addr(pci_addr)? {
                return Dev::open(&info);
            }
        }
        let present: Vec<String> = list.iter().filter_map(|d| d.ibdev_name().ok()).collect();
        bail!(
            NotFound,
            "no device at PCI address `{pci_addr}` (this process sees {} device(s): {})",
            present.len(),
            present.join(", ")
        )
    }

    /// Opens the first device `pick` accepts.
    pub fn open_first(mut pick: impl FnMut(&Devinfo<'_>) -> bool) -> Result<Dev> {
        let list = DevList::new()?;
        match list.find(|d| pick(d)) {
            Some(info) => Dev::open(&info),
            None => bail!(NotFound, "no device of this process fits"),
        }
    }

    /// `doca_dev_as_devinfo`.
    #[doc(alias = "doca_dev_as_devinfo")]
    pub fn as_devinfo(&self) -> Devinfo<'_> {
        Devinfo {
            // SAFETY: a live device (null only if it were not, which the type rules out).
            raw: unsafe { sys::doca_dev_as_devinfo(self.inner.raw) },
            _list: PhantomData,
        }
    }

    pub(crate) fn raw(&self) -> *mut sys::doca_dev {
        self.inner.raw
    }

    /// The `struct doca_dev *`, for calls through `dpakit-sys`; valid while a clone lives.
    pub fn as_raw(&self) -> *mut sys::doca_dev {
        self.inner.raw
    }
}

/// Opens the first device with a DPA — what a program does before creating a DPA context.
pub fn open_dpa_dev() -> Result<Dev> {
    Dev::open_first(|d| d.dpa_cap_is_supported().is_ok()).map_err(|_| {
        Error::new(
            ErrorCode::NotFound,
            "no device with a DPA (doca_dpa_cap_is_supported) in this process's device list",
        )
    })
}

struct DevRepInner {
    raw: *mut sys::doca_dev_rep,
    _dev: Dev,
}

impl Drop for DevRepInner {
    #[doc(alias = "doca_dev_rep_close")]
    fn drop(&mut self) {
        // Everything created on the representor holds a clone of it, so it closes last.
        let _ = doca!(doca_dev_rep_close(self.raw));
    }
}

/// `doca_dev_rep`: an open representor of a host-side PCI function, seen from the BlueField
/// Arm side (Comch servers are created on one). Clones share it; it keeps its device open.
#[derive(Clone)]
pub struct DevRep {
    inner: Rc<DevRepInner>,
}

impl fmt::Debug for DevRep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("DevRep").field(&self.inner.raw).finish()
    }
}

impl DevRep {
    /// Opens the representor of `dev` at `pci_addr` (`doca_devinfo_rep_create_list`, compare,
    /// `doca_dev_rep_open`): what DOCA programs do with their `-r` argument. `NOT_FOUND` when
    /// `dev` has no representor there.
    #[doc(alias = "doca_dev_rep_open")]
    pub fn open_by_pci(dev: &Dev, pci_addr: &str) -> Result<DevRep> {
        let c_addr = CString::new(pci_addr)
            .map_err(|_| Error::new(ErrorCode::InvalidValue, "a PCI address with a NUL byte"))?;
        let mut list = std::ptr::null_mut();
        let mut len = 0;
        doca!(doca_devinfo_rep_create_list(
            dev.raw(),
            sys::DOCA_DEVINFO_REP_FILTER_NET as i32,
            &mut list,
            &mut len
        ))?;
        let mut found = Err(Error::new(
            ErrorCode::NotFound,
            format!("the device has no representor at PCI address `{pci_addr}`"),
        ));
        for i in 0..len as usize {
            // SAFETY: `list` holds `len` representor pointers until it is destroyed below.
            let rep = unsafe { *list.add(i) };
            let mut equal = 0u8;
            if let Err(e) = doca!(doca_devinfo_rep_is_equal_pci_addr(
                rep,
                c_addr.as_ptr(),
                &mut equal
            )) {
                found = Err(e);
                break;
            }
            if equal != 0 {
                let mut raw = std::ptr::null_mut();
                found = doca!(doca_dev_rep_open(rep, &mut raw)).map(|()| DevRep {
                    inner: Rc::new(DevRepInner {
                        raw,
                        _dev: dev.clone(),
                    }),
                });
                break;
            }
        }
        let _ = doca!(doca_devinfo_rep_destroy_list(list));
        found
    }

    pub(crate) fn raw(&self) -> *mut sys::doca_dev_rep {
        self.inner.raw
    }
}
