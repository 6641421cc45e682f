//! The CRC-32C checksum of a payload command.

/// The Castagnoli CRC that Pulsar's payload checksum uses (the iSCSI polynomial), the same
/// definition pulsar-rs checks against.
const CASTAGNOLI: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::CRC_32_ISCSI);

/// The CRC-32C (Castagnoli) of `bytes`, as Pulsar's payload commands carry it.
///
/// Public so that tests can compute the checksum the bridge must insert independently of the
/// frame they check; for the standard check input `b"123456789"` it is `0xE306_9283`.
pub fn crc32c(bytes: &[u8]) -> u32 {
    CASTAGNOLI.checksum(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_standard_check_value() {
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
    }

    #[test]
    fn matches_rfc_3720_test_vectors() {
        // RFC 3720 (iSCSI), appendix B.4: 32 bytes of zeros and 32 bytes of 0xff.
        assert_eq!(crc32c(&[0u8; 32]), 0x8A91_36AA);
        assert_eq!(crc32c(&[0xffu8; 32]), 0x62A8_AB43);
    }
}
