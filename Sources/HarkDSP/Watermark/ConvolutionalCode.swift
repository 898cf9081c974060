/// The rate-1/2, constraint-length-7 convolutional code (generators 133, 171 octal, the
/// "NASA standard" code), zero-terminated, with a soft-decision Viterbi decoder.
///
/// Free distance 10: the decoder corrects scattered errors and, more usefully here, turns
/// many weak soft values into a confident decision.
enum ConvolutionalCode {
    static let generators: (UInt8, UInt8) = (0o133, 0o171)
    static let memory = 6
    static let states = 1 << memory

    /// Coded bits for `bits` followed by six zero tail bits: `2 × (bits.count + 6)` values.
    static func encode(_ bits: [Bool]) -> [Bool] {
        var register: UInt8 = 0
        var out: [Bool] = []
        out.reserveCapacity(2 * (bits.count + memory))
        for b in bits + [Bool](repeating: false, count: memory) {
            register = ((register << 1) | (b ? 1 : 0)) & 0x7F
            out.append(parity(register & generators.0))
            out.append(parity(register & generators.1))
        }
        return out
    }

    /// The coded pair of each 7-bit encoder register, as signs (+1 for a 1).
    private static let signs: [(Float, Float)] = (0..<128).map { r in
        (parity(UInt8(r) & generators.0) ? 1 : -1, parity(UInt8(r) & generators.1) ? 1 : -1)
    }

    /// The most likely input given soft values (positive: a coded 1 is likely), one per coded
    /// bit. Returns `count` decoded bits.
    ///
    /// Butterfly form: new state `n` (the last six inputs) is reached from old states `n >> 1`
    /// and `(n >> 1) | 32` with input `n & 1`.
    static func decode(_ soft: [Float], count: Int) -> [Bool] {
        let steps = count + memory
        precondition(soft.count >= 2 * steps)
        // New states 2i + u (u the input) come from old states i and i + 32: for each input,
        // 32 add-compare-selects over contiguous arrays, which the compiler vectorises. The
        // detector decodes every alignment it scores, 60 times a second.
        var metric = [Float](repeating: -1e30, count: states)
        var half = [Float](repeating: 0, count: states)          // [u·32 + i]: new state 2i + u
        // Predecessor of state 2i + u at step t, at t·64 + u·32 + i.
        var predecessors = [UInt8](repeating: 0, count: steps * states)
        metric[0] = 0
        branchSigns.withUnsafeBufferPointer { sg in
            metric.withUnsafeMutableBufferPointer { m in
                half.withUnsafeMutableBufferPointer { h in
                    predecessors.withUnsafeMutableBufferPointer { pred in
                        for t in 0..<steps {
                            let s0 = soft[2 * t], s1 = soft[2 * t + 1]
                            for u in 0..<(t >= count ? 1 : 2) {
                                let g = 128 * u, out = 32 * u, p = t * states + 32 * u
                                for i in 0..<32 {
                                    let fromA = m[i] + sg[g + i] * s0 + sg[g + 32 + i] * s1
                                    let fromB = m[i + 32] + sg[g + 64 + i] * s0 + sg[g + 96 + i] * s1
                                    let takeB = fromB > fromA
                                    h[out + i] = takeB ? fromB : fromA
                                    pred[p + i] = UInt8(truncatingIfNeeded: i) | (takeB ? 32 : 0)
                                }
                            }
                            // In the tail only input 0 is allowed: odd states become unreachable.
                            if t >= count { for i in 0..<32 { h[32 + i] = -1e30 } }
                            for i in 0..<32 {
                                m[2 * i] = h[i]
                                m[2 * i + 1] = h[32 + i]
                            }
                        }
                    }
                }
            }
        }
        var state = 0   // the tail returns the encoder to zero
        var bits = [Bool](repeating: false, count: steps)
        for t in stride(from: steps - 1, through: 0, by: -1) {
            bits[t] = state & 1 == 1
            state = Int(predecessors[t * states + (state & 1) * 32 + state >> 1])
        }
        return Array(bits.prefix(count))
    }

    /// The butterflies' coded signs, at u·128 + block·32 + i for input u and old state i:
    /// blocks 0 and 1 are the two coded bits from old state i (register 2i + u), blocks 2 and
    /// 3 from old state i + 32 (register 64 + 2i + u).
    private static let branchSigns: [Float] = {
        var v = [Float](repeating: 0, count: 256)
        for u in 0..<2 {
            for i in 0..<32 {
                let ra = 2 * i + u, rb = 64 + 2 * i + u
                v[128 * u + i] = signs[ra].0
                v[128 * u + 32 + i] = signs[ra].1
                v[128 * u + 64 + i] = signs[rb].0
                v[128 * u + 96 + i] = signs[rb].1
            }
        }
        return v
    }()

    @inline(__always)
    private static func parity(_ x: UInt8) -> Bool { x.nonzeroBitCount & 1 == 1 }
}

/// CRC-16/CCITT-FALSE (polynomial 0x1021, initial value 0xFFFF), over bits, most significant first.
enum CRC16 {
    static func checksum(_ bits: [Bool]) -> UInt16 {
        var reg: UInt16 = 0xFFFF
        for b in bits {
            let top = (reg >> 15) & 1 == 1
            reg <<= 1
            if top != b { reg ^= 0x1021 }
        }
        return reg
    }
}
