//! A MsgqPath whose messages are the program's own types: requests and responses checked to fit
//! an immediate at compile time, and their size checked on arrival.

use dpakit::abi::Echo;
use dpakit::dpa::Dpa;
use dpakit::pe::Pe;
use dpakit::{ErrorCode, MsgqPath, kernels, kit_app, open_dpa_dev};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(10);

dpakit::abi::pod_struct! {
    /// A request of 8 bytes.
    #[derive(Debug, PartialEq, Eq)]
    pub struct Wide { pub value: u64 }
}
dpakit::abi::pod_struct! {
    /// A response of 4 bytes.
    #[derive(Debug, PartialEq, Eq)]
    pub struct Narrow { pub value: u32 }
}
dpakit::abi::impl_immediate!(Wide, Narrow);

/// The kit's kernels, and a PE for the path.
fn kit_dpa() -> (Dpa, Pe) {
    let dpa = Dpa::builder(&open_dpa_dev().unwrap())
        .app(kit_app())
        .start()
        .unwrap();
    (dpa, Pe::new().unwrap())
}

#[test]
fn requests_and_responses_travel_as_typed_values() {
    let (dpa, pe) = kit_dpa();
    let path = MsgqPath::builder(&dpa, &pe, &kernels::ECHO)
        .depth(8)
        .messages::<Echo, Echo>()
        .start()
        .unwrap();
    for token in 0..100u64 {
        let sent = Echo {
            token,
            timestamp_ns: token * 3,
            tag: !token,
        };
        assert_eq!(path.call(&sent, WAIT).unwrap(), sent);
    }
    // Several requests in flight, the responses in order.
    for token in 0..20u64 {
        path.request(&Echo {
            token,
            ..Echo::default()
        })
        .unwrap();
    }
    for token in 0..20u64 {
        assert_eq!(path.response(WAIT).unwrap().token, token);
    }
}

#[test]
fn a_response_of_another_size_is_refused_not_misread() {
    let (dpa, pe) = kit_dpa();
    // The echo answers with the request's 8 bytes; the program expects 4.
    let path = MsgqPath::builder(&dpa, &pe, &kernels::ECHO)
        .messages::<Wide, Narrow>()
        .start()
        .unwrap();
    let e = path.call(&Wide { value: 7 }, WAIT).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidValue, "{e}");
}
