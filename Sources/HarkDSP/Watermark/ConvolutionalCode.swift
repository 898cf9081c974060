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
        var metric = [Float](repeating: -1e30, count: states)
        var next = [Float](repeating: -1e30, count: states)
        var survivors = [UInt8](repeating: 0, count: steps * states)   // predecessor state
        metric[0] = 0
        signs.withUnsafeBufferPointer { sg in
            survivors.withUnsafeMutableBufferPointer { surv in
                for t in 0..<steps {
                    let s0 = soft[2 * t], s1 = soft[2 * t + 1]
                    // In the tail only input 0 is allowed: odd states become unreachable.
                    metric.withUnsafeBufferPointer { m in
                        next.withUnsafeMutableBufferPointer { nx in
                            for n in 0..<states {
                                if t >= count && n & 1 == 1 { nx[n] = -1e30; continue }
                                let a = n >> 1, b = a | 32
                                let ra = (a << 1 | (n & 1)) & 0x7F, rb = (b << 1 | (n & 1)) & 0x7F
                                let ma = m[a] + sg[ra].0 * s0 + sg[ra].1 * s1
                                let mb = m[b] + sg[rb].0 * s0 + sg[rb].1 * s1
                                if ma >= mb {
                                    nx[n] = ma
                                    surv[t * states + n] = UInt8(a)
                                } else {
                                    nx[n] = mb
                                    surv[t * states + n] = UInt8(b)
                                }
                            }
                        }
                    }
                    swap(&metric, &next)
                }
            }
        }
        var state = 0   // the tail returns the encoder to zero
        var bits = [Bool](repeating: false, count: steps)
        for t in stride(from: steps - 1, through: 0, by: -1) {
            bits[t] = state & 1 == 1
            state = Int(survivors[t * states + state])
        }
        return Array(bits.prefix(count))
    }

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
