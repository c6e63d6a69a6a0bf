/// The checksum the DMA-offload kernel reports over the bytes it read: FNV-1a over little-endian
/// 64-bit words (the tail zero-padded), then folded with the length.
///
/// Word-at-a-time keeps it cheap enough for the device; host and kernel share this one definition
/// so a mismatch means the data differs, not the arithmetic.
pub fn checksum64(data: &[u8]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut hash = OFFSET;
    let mut words = data.chunks_exact(8);
    for word in &mut words {
        let mut w = [0u8; 8];
        w.copy_from_slice(word);
        hash = (hash ^ u64::from_le_bytes(w)).wrapping_mul(PRIME);
    }
    let tail = words.remainder();
    if !tail.is_empty() {
        let mut w = [0u8; 8];
        w[..tail.len()].copy_from_slice(tail);
        hash = (hash ^ u64::from_le_bytes(w)).wrapping_mul(PRIME);
    }
    (hash ^ data.len() as u64).wrapping_mul(PRIME)
}

#[cfg(test)]
mod tests {
    use super::checksum64;

    #[test]
    fn sees_every_byte_and_the_length() {
        let a = [1u8, 2, 3, 4, 5, 6, 7, 8, 9];
        let mut b = a;
        b[8] = 10;
        assert_ne!(checksum64(&a), checksum64(&b));
        // Zero padding of the tail must not make lengths collide.
        assert_ne!(checksum64(&[0u8; 3]), checksum64(&[0u8; 4]));
        assert_eq!(checksum64(&a), checksum64(&a));
    }
}
