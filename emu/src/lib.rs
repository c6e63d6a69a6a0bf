//! The dpakit soft device: a software model of DOCA Core, Comch, MsgQ and the DPA.
