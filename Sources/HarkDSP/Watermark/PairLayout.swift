/// Where the detector keeps each tone pair's value: pair-major. Pair `j` of every coded-bit
/// position (slot by slot, 108 of them) comes before pair `j + 1`, so that summing a coded bit's
/// pairs, which every alignment does, is a sum of whole SIMD vectors rather than of scattered
/// groups of four.
enum PairLayout {
    /// Coded-bit positions of one copy (slots × positions).
    static let positions = WatermarkFormat.symbolsPerCopy * WatermarkFormat.bitsPerSymbol
    /// Values per pair rank in the scratch buffers, padded with zeros to whole `SIMD16`s.
    static let stride = (positions + 15) / 16 * 16
    static let vectors = stride / 16
    /// Floats in one alignment's scratch buffer.
    static let valueCount = WatermarkFormat.pairsPerBit * stride

    /// Index of a pair in the ring's rows and in the probe list (unpadded).
    @inline(__always)
    static func ringIndex(slot: Int, position: Int, pair: Int) -> Int {
        pair * positions + slot * WatermarkFormat.bitsPerSymbol + position
    }

    /// Index of a pair in a scratch buffer (padded).
    @inline(__always)
    static func valueIndex(slot: Int, position: Int, pair: Int) -> Int {
        pair * stride + slot * WatermarkFormat.bitsPerSymbol + position
    }
}
