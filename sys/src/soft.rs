//! The soft device's own controls (`dpakit_soft.h`).
