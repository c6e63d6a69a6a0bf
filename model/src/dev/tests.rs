//! Devices, representors, capabilities and topologies.

use super::*;

fn code<T: fmt::Debug>(r: Result<T>) -> ErrorCode {
    r.expect_err("expected an error").code()
}

fn host() -> Devinfo {
    Dev::open_by_pci(Topology::global(), Side::Host, "0000:b1:00.0")
        .unwrap()
        .as_devinfo()
        .clone()
}

fn arm_dev() -> Dev {
    Dev::open_by_pci(Topology::global(), Side::Arm, "0000:03:00.0").unwrap()
}

fn no_dpa_topology() -> Topology {
    Topology::builder()
        .device(DeviceSpec::host("0000:b1:00.0"))
        .device(DeviceSpec::host("0000:b1:00.1").without_dpa())
        .device(DeviceSpec::host("0000:b1:00.2").func_type(PciFuncType::Vf))
        .device(
            DeviceSpec::arm("0000:03:00.0")
                .representor(RepSpec::pf("0000:b1:00.0").represents("0000:b1:00.0"))
                .representor(RepSpec::pf("0000:b1:00.1").represents("0000:b1:00.1"))
                .representor(RepSpec::vf("0000:b1:00.2").represents("0000:b1:00.2")),
        )
        .build()
        .unwrap()
}

#[test]
fn pci_addresses_parse_in_both_formats() {
    let a = PciAddr::parse("0000:03:00.0").unwrap();
    assert_eq!(
        (a.domain(), a.bus(), a.device(), a.function()),
        (0, 3, 0, 0)
    );
    assert_eq!(a.to_string(), "0000:03:00.0");
    assert_eq!(
        PciAddr::parse("b1:1F.7").unwrap().to_string(),
        "0000:b1:1f.7"
    );
    assert_eq!("0001:b1:00.2".parse::<PciAddr>().unwrap().domain(), 1);
    assert!(a.matches("03:00.0").unwrap());
    assert!(a.matches("0000:03:00.0").unwrap());
    assert!(!a.matches("0001:03:00.0").unwrap());
    assert!(!a.matches("03:00.1").unwrap());
    assert_eq!(
        PciAddr::new(0, 3, 0x1f, 7).unwrap().to_string(),
        "0000:03:1f.7"
    );
}

#[test]
fn malformed_pci_address_is_invalid_value() {
    for bad in [
        "",
        "03:00",
        "3:00.0",
        "0000:03:00",
        "0000:03:00.8",
        "03:20.0",
        "x0:00.0",
        "0:03:00.0",
        "0000:03:00.0.1",
        "1:2:3:4.0",
    ] {
        assert_eq!(code(PciAddr::parse(bad)), ErrorCode::InvalidValue, "{bad}");
        assert_eq!(
            code(host().pci_addr_is(bad)),
            ErrorCode::InvalidValue,
            "{bad}"
        );
    }
    assert_eq!(code(PciAddr::new(0, 0, 0x20, 0)), ErrorCode::InvalidValue);
    assert_eq!(code(PciAddr::new(0, 0, 0, 8)), ErrorCode::InvalidValue);
}

#[test]
fn default_topology_is_valid() {
    let list = devinfo_list();
    assert_eq!(list.len(), 3);
    let host = &list[0];
    assert_eq!(
        (host.side(), host.get_pci_addr_str().as_str()),
        (Side::Host, "0000:b1:00.0")
    );
    assert_eq!(host.get_iface_name(), "ens1f0np0");
    assert_eq!(host.get_pci_func_type(), PciFuncType::Pf);
    assert!(host.pci_addr_is("b1:00.0").unwrap());
    assert_eq!(host.dpa_cap_is_supported(), Ok(()));
    assert_eq!(host.comch_msgq_cap_is_supported(), Ok(()));
    let arm = &list[1];
    assert_eq!(arm.side(), Side::Arm);
    assert_eq!(
        Topology::global().devinfo_list_for(Side::Arm),
        vec![arm.clone()]
    );
    // Fresh copies are other machines; the global one is shared.
    assert_ne!(Topology::bluefield3(), *Topology::global());
    assert_eq!(Topology::default(), *Topology::global());
    assert_eq!(Topology::bluefield3().devinfo_list().len(), 3);
}

#[test]
fn open_by_pci_finds_the_device_of_the_side() {
    let h = Dev::open_by_pci(Topology::global(), Side::Host, "b1:00.0").unwrap();
    let a = arm_dev();
    assert_eq!(h.as_devinfo().side(), Side::Host);
    assert_eq!(a.as_devinfo().side(), Side::Arm);
    assert_ne!(h, a);
    // Opening the same device twice yields the same device.
    assert_eq!(Dev::open(h.as_devinfo()).unwrap(), h);
}

#[test]
fn open_by_pci_absent_is_not_found() {
    let e = Dev::open_by_pci(Topology::global(), Side::Host, "0000:04:00.0").unwrap_err();
    assert_eq!(e.code(), ErrorCode::NotFound);
    assert!(
        e.message().contains("0000:04:00.0") && e.message().contains("0000:b1:00.0"),
        "{e}"
    );
    let e = Dev::open_by_pci(Topology::global(), Side::Host, "nonsense").unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidValue);
}

#[test]
fn open_by_pci_ambiguous_short_form_is_invalid_value() {
    let topo = Topology::builder()
        .device(DeviceSpec::host("0000:03:00.0"))
        .device(DeviceSpec::host("0001:03:00.0"))
        .build()
        .unwrap();
    assert_eq!(
        code(Dev::open_by_pci(&topo, Side::Host, "03:00.0")),
        ErrorCode::InvalidValue
    );
    assert!(Dev::open_by_pci(&topo, Side::Host, "0001:03:00.0").is_ok());
}

#[test]
fn representors_are_listed_on_the_arm_side() {
    let arm = arm_dev();
    let reps = arm.devinfo_rep_list(RepFilter::ALL).unwrap();
    let addrs: Vec<String> = reps.iter().map(DevinfoRep::get_pci_addr_str).collect();
    assert_eq!(addrs, ["0000:b1:00.0", "0000:b1:00.2"]);
    assert_eq!(reps[0].get_pci_func_type(), PciFuncType::Pf);
    assert_eq!(reps[1].get_pci_func_type(), PciFuncType::Vf);
    assert_eq!(reps[0].get_iface_name(), "pf0hpf");
    assert_eq!(reps[0].host_devinfo(), Some(host()));
    let vf = reps[1]
        .host_devinfo()
        .expect("the host VF is in the topology");
    assert_eq!(vf.get_pci_addr_str(), "0000:b1:00.2");
    assert_eq!(vf.get_pci_func_type(), PciFuncType::Vf);
    assert_eq!(arm.devinfo_rep_list(RepFilter::NET).unwrap().len(), 2);
    assert_eq!(arm.devinfo_rep_list(RepFilter::EMULATED).unwrap().len(), 0);
    let rep = DevRep::open_by_pci(&arm, "b1:00.2").unwrap();
    assert_eq!(rep.as_devinfo(), &reps[1]);
    assert_eq!(DevRep::open(&reps[1]).unwrap(), rep);
}

#[test]
fn representor_list_on_host_is_not_supported() {
    let host = Dev::open(&host()).unwrap();
    assert_eq!(
        code(host.devinfo_rep_list(RepFilter::ALL)),
        ErrorCode::NotSupported
    );
    assert_eq!(
        code(DevRep::open_by_pci(&host, "b1:00.0")),
        ErrorCode::NotSupported
    );
}

#[test]
fn representor_absent_is_not_found() {
    assert_eq!(
        code(DevRep::open_by_pci(&arm_dev(), "b1:00.1")),
        ErrorCode::NotFound
    );
}

#[test]
fn representor_filter_unknown_bits_are_invalid_value() {
    assert_eq!(code(RepFilter::from_bits(1)), ErrorCode::InvalidValue);
    assert_eq!(code(RepFilter::from_bits(1 << 3)), ErrorCode::InvalidValue);
    assert_eq!(
        RepFilter::from_bits(6).unwrap(),
        RepFilter::NET | RepFilter::EMULATED
    );
}

#[test]
fn caps_answer_the_documented_limits() {
    let d = host();
    assert_eq!(d.dpa_get_core_num(), Ok(16));
    assert_eq!(d.dpa_get_num_eus_per_core(), Ok(16));
    assert_eq!(d.dpa_get_total_num_eus_available(), Ok(256));
    assert_eq!(d.dpa_cap_get_max_threads(), Ok(256));
    assert_eq!(d.dpa_cap_get_max_completion_queue_size(), Ok(65536));
    assert_eq!(d.dpa_cap_get_max_memory(), Ok(256 << 20));
    assert_eq!(d.comch_msgq_cap_get_max_num_consumers(), Ok(64));
    assert_eq!(d.comch_msgq_cap_get_max_num_producers(), Ok(64));
    assert_eq!(d.comch_consumer_cap_get_max_num_tasks(), Ok(65536));
    assert_eq!(d.comch_producer_cap_get_max_num_tasks(), Ok(65536));
    assert_eq!(d.comch_consumer_cap_get_max_imm_data_len(), Ok(32));
    assert_eq!(d.comch_consumer_cap_get_max_consumers(), Ok(64));
    assert_eq!(d.comch_producer_cap_get_max_producers(), Ok(64));
    assert_eq!(d.comch_consumer_cap_get_max_dev_num_recv(), Ok(8192));
    assert_eq!(d.comch_consumer_completion_cap_get_max_num_recv(), Ok(8192));
    assert_eq!(d.comch_producer_cap_get_max_dev_num_send(), Ok(8192));
    assert_eq!(d.comch_producer_cap_is_supported(), Ok(()));
    assert_eq!(d.comch_consumer_cap_is_supported(), Ok(()));
    assert_eq!(d.mmap_cap_is_export_pci_supported(), Ok(true));
    assert_eq!(d.mmap_cap_get_max_len(), Ok(1 << 30));
}

#[test]
fn device_without_dpa_is_not_supported() {
    let topo = no_dpa_topology();
    let d = Dev::open_by_pci(&topo, Side::Host, "b1:00.1").unwrap();
    let d = d.as_devinfo();
    let e = d.dpa_cap_is_supported().unwrap_err();
    assert_eq!(e.code(), ErrorCode::NotSupported);
    assert!(e.message().contains("0000:b1:00.1"), "{e}");
    assert_eq!(code(d.dpa_get_core_num()), ErrorCode::NotSupported);
    assert_eq!(code(d.dpa_get_num_eus_per_core()), ErrorCode::NotSupported);
    assert_eq!(
        code(d.dpa_get_total_num_eus_available()),
        ErrorCode::NotSupported
    );
    assert_eq!(code(d.dpa_cap_get_max_memory()), ErrorCode::NotSupported);
    assert_eq!(
        code(d.comch_msgq_cap_is_supported()),
        ErrorCode::NotSupported
    );
    assert_eq!(
        code(d.comch_msgq_cap_get_max_num_consumers()),
        ErrorCode::NotSupported
    );
    assert_eq!(
        code(d.comch_consumer_cap_get_max_dev_num_recv()),
        ErrorCode::NotSupported
    );
    // The rest of the device still works.
    assert_eq!(d.comch_cap_client_is_supported(), Ok(()));
    assert_eq!(d.comch_consumer_cap_get_max_num_tasks(), Ok(65536));
}

#[test]
fn msgq_without_msgq_cap_is_not_supported() {
    let caps = DevCaps {
        msgq: false,
        ..DevCaps::BLUEFIELD3
    };
    let topo = Topology::builder()
        .device(DeviceSpec::host("03:00.0").caps(caps))
        .build()
        .unwrap();
    let d = &topo.devinfo_list()[0];
    assert_eq!(d.dpa_cap_is_supported(), Ok(()));
    assert_eq!(
        code(d.comch_msgq_cap_is_supported()),
        ErrorCode::NotSupported
    );
}

#[test]
fn fast_path_caps_without_fast_path_are_not_supported() {
    let topo = Topology::builder()
        .device(DeviceSpec::host("03:00.0").caps(DevCaps::NONE))
        .build()
        .unwrap();
    let d = &topo.devinfo_list()[0];
    assert_eq!(
        code(d.comch_producer_cap_is_supported()),
        ErrorCode::NotSupported
    );
    assert_eq!(
        code(d.comch_consumer_cap_is_supported()),
        ErrorCode::NotSupported
    );
    assert_eq!(
        code(d.comch_consumer_cap_get_max_num_tasks()),
        ErrorCode::NotSupported
    );
    assert_eq!(
        code(d.comch_producer_cap_get_max_num_tasks()),
        ErrorCode::NotSupported
    );
    assert_eq!(
        code(d.comch_consumer_cap_get_max_imm_data_len()),
        ErrorCode::NotSupported
    );
    assert_eq!(
        code(d.comch_cap_client_is_supported()),
        ErrorCode::NotSupported
    );
    assert_eq!(d.mmap_cap_is_export_pci_supported(), Ok(false));
    assert_eq!(d.mmap_cap_is_create_from_export_pci_supported(), Ok(false));
}

#[test]
fn comch_server_on_arm_client_on_host() {
    let h = host();
    let a = arm_dev().as_devinfo().clone();
    assert_eq!(h.comch_cap_client_is_supported(), Ok(()));
    assert_eq!(
        code(h.comch_cap_server_is_supported()),
        ErrorCode::NotSupported
    );
    assert_eq!(a.comch_cap_server_is_supported(), Ok(()));
    assert_eq!(
        code(a.comch_cap_client_is_supported()),
        ErrorCode::NotSupported
    );
}

#[test]
fn custom_topology_with_several_functions() {
    let topo = no_dpa_topology();
    assert_eq!(topo.devinfo_list_for(Side::Host).len(), 3);
    let vf = Dev::open_by_pci(&topo, Side::Host, "0000:b1:00.2").unwrap();
    assert_eq!(vf.as_devinfo().get_pci_func_type(), PciFuncType::Vf);
    assert_eq!(vf.as_devinfo().get_ibdev_name(), "mlx5_2");
    assert_eq!(vf.as_devinfo().get_iface_name(), "enp177s0f2np2");
    let arm = Dev::open_by_pci(&topo, Side::Arm, "03:00.0").unwrap();
    let reps = arm.devinfo_rep_list(RepFilter::ALL).unwrap();
    assert_eq!(reps.len(), 3);
    assert_eq!(reps[1].get_iface_name(), "pf1hpf");
    assert_eq!(reps[2].get_iface_name(), "pf0vf0");
    assert_eq!(reps[2].host_devinfo().as_ref(), Some(vf.as_devinfo()));
    // Devices of different topologies never compare equal.
    let other = Dev::open_by_pci(&Topology::bluefield3(), Side::Host, "b1:00.0").unwrap();
    let same_addr = Dev::open_by_pci(&topo, Side::Host, "b1:00.0").unwrap();
    assert_ne!(other, same_addr);
    assert_eq!(same_addr.as_devinfo().topology(), topo);
}

#[test]
fn duplicate_device_is_already_exist() {
    let b = Topology::builder()
        .device(DeviceSpec::host("0000:03:00.0"))
        .device(DeviceSpec::host("03:00.0"));
    assert_eq!(code(b.build()), ErrorCode::AlreadyExist);
    // One address on both sides, or on the Arm side of two cards, is fine.
    let ok = Topology::builder()
        .device(DeviceSpec::host("03:00.0"))
        .device(DeviceSpec::host("04:00.0").card(1))
        .device(DeviceSpec::arm("03:00.0"))
        .device(DeviceSpec::arm("03:00.0").card(1))
        .build();
    assert!(ok.is_ok());
    let dup_rep = Topology::builder()
        .device(
            DeviceSpec::arm("03:00.0")
                .representor(RepSpec::pf("b1:00.0"))
                .representor(RepSpec::vf("b1:00.0")),
        )
        .build();
    assert_eq!(code(dup_rep), ErrorCode::AlreadyExist);
}

#[test]
fn malformed_topology_is_invalid_value() {
    assert_eq!(
        code(
            Topology::builder()
                .device(DeviceSpec::host("03:00"))
                .build()
        ),
        ErrorCode::InvalidValue
    );
    let rep_on_host =
        Topology::builder().device(DeviceSpec::host("03:00.0").representor(RepSpec::pf("b1:00.0")));
    assert_eq!(code(rep_on_host.build()), ErrorCode::InvalidValue);
    let bad_rep =
        Topology::builder().device(DeviceSpec::arm("03:00.0").representor(RepSpec::pf("b1:00")));
    assert_eq!(code(bad_rep.build()), ErrorCode::InvalidValue);
}

#[test]
fn representor_of_absent_host_device_is_not_found() {
    let b = Topology::builder()
        .device(DeviceSpec::host("03:00.0").card(1))
        .device(
            DeviceSpec::arm("03:00.0").representor(RepSpec::pf("b1:00.0").represents("03:00.0")),
        );
    // The host device exists, but on another card.
    assert_eq!(code(b.build()), ErrorCode::NotFound);
}

#[test]
fn objects_are_send_sync_and_cheap_to_clone() {
    fn check<T: Send + Sync + Clone>() {}
    check::<Topology>();
    check::<Devinfo>();
    check::<Dev>();
    check::<DevinfoRep>();
    check::<DevRep>();
}
