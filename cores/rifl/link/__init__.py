"""RIFL Layer 1 endpoint: framer, verification, NACK replay, link bring-up and ON/OFF flow control.

RIFLEndpoint (`endpoint`, with the STATUS fields of its CSR) is three submodules: RIFLTransmitter (`tx`: slot
choice; its RIFLTxPipeline: replay buffer, CRC, scrambler), RIFLReceiver (`rx`: its RIFLFrameCheck:
descrambler, CRC syndrome, decoding; the decision; its RIFLReceiveBuffer: receive buffer, flow-control
hysteresis; its RIFLLinkState: alignment and link state) and RIFLReplayControl (`replay`: send pointer, RETRANS
handling, hold-off, confirmation window); `crc` holds the CRC-12. The names below are re-exported for
`from cores.rifl.link import ...`.
"""
from cores.rifl.link.crc import crc12_bits, crc12_matrix, crc12_parts
from cores.rifl.link.endpoint import STATUS, RIFLEndpoint
from cores.rifl.link.replay import RIFLReplayControl
from cores.rifl.link.rx import RIFLFrameCheck, RIFLLinkState, RIFLReceiveBuffer, RIFLReceiver
from cores.rifl.link.tx import RIFLTransmitter, RIFLTxPipeline

__all__ = ["STATUS", "RIFLEndpoint", "RIFLFrameCheck", "RIFLLinkState", "RIFLReceiveBuffer", "RIFLReceiver",
           "RIFLReplayControl", "RIFLTransmitter", "RIFLTxPipeline", "crc12_bits", "crc12_matrix", "crc12_parts"]
