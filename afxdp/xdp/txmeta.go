package xdp

// TxMetadataLen is the room WithTxMetadata reserves in front of every
// transmit frame for struct xsk_tx_metadata: a u64 of flags and the
// checksum request.
const TxMetadataLen = 16
