// Reference values from IEC 61672-1 (2002 edition, published identically as IS 15575-1:2005),
// copied here so the tests depend on nothing outside the project.

/// One row of the frequency-weighting table: exact base-10 frequency 1000·10^(0.1(n−30)),
/// design goals, and the tighter of the 2002 and 2013 class 1 tolerances (dB; −∞ as -.infinity).
struct WeightingRow {
    let nominal: Double
    let exact: Double
    let aGoal: Double
    let cGoal: Double
    let upper: Double
    let lower: Double
}

let weightingTable: [WeightingRow] = {
    // nominal, A goal, C goal, class 1 (+, −) — the tighter of the 2002 and derived 2013 columns
    let rows: [(Double, Double, Double, Double, Double)] = [
        (10, -70.430, -14.330, 3.0, -.infinity),
        (12.5, -63.371, -11.249, 2.5, -.infinity),
        (16, -56.688, -8.531, 2.0, -4.0),
        (20, -50.452, -6.240, 2.0, -2.0),
        (25, -44.703, -4.405, 2.0, -1.5),
        (31.5, -39.440, -3.010, 1.5, -1.5),
        (40, -34.630, -1.999, 1.0, -1.0),
        (50, -30.228, -1.294, 1.0, -1.0),
        (63, -26.194, -0.818, 1.0, -1.0),
        (80, -22.504, -0.504, 1.0, -1.0),
        (100, -19.143, -0.300, 1.0, -1.0),
        (125, -16.098, -0.169, 1.0, -1.0),
        (160, -13.350, -0.085, 1.0, -1.0),
        (200, -10.870, -0.033, 1.0, -1.0),
        (250, -8.630, -0.000, 1.0, -1.0),
        (315, -6.611, 0.019, 1.0, -1.0),
        (400, -4.808, 0.029, 1.0, -1.0),
        (500, -3.233, 0.033, 1.0, -1.0),
        (630, -1.900, 0.029, 1.0, -1.0),
        (800, -0.824, 0.019, 1.0, -1.0),
        (1000, 0.000, 0.000, 0.7, -0.7),
        (1250, 0.591, -0.033, 1.0, -1.0),
        (1600, 0.981, -0.085, 1.0, -1.0),
        (2000, 1.200, -0.169, 1.0, -1.0),
        (2500, 1.271, -0.300, 1.0, -1.0),
        (3150, 1.199, -0.504, 1.0, -1.0),
        (4000, 0.970, -0.818, 1.0, -1.0),
        (5000, 0.549, -1.294, 1.5, -1.5),
        (6300, -0.121, -1.999, 1.5, -2.0),
        (8000, -1.111, -3.010, 1.5, -2.5),
        (10000, -2.492, -4.405, 2.0, -3.0),
        (12500, -4.318, -6.240, 2.0, -5.0),
        (16000, -6.603, -8.531, 2.5, -16.0),
        (20000, -9.317, -11.249, 3.0, -.infinity),
    ]
    return rows.enumerated().map { i, r in
        let exact = 1000 * pow(10, 0.1 * Double(i + 10 - 30))
        return WeightingRow(nominal: r.0, exact: exact, aGoal: r.1, cGoal: r.2, upper: r.3, lower: r.4)
    }
}()

import Foundation

/// Tone-burst goals relative to the steady level of the same tone (IEC 61672-1, 5.9).
func burstGoalF(_ tb: Double) -> Double { 10 * log10(1 - exp(-tb / 0.125)) }
func burstGoalS(_ tb: Double) -> Double { 10 * log10(1 - exp(-tb / 1.0)) }
func burstGoalE(_ tb: Double) -> Double { 10 * log10(tb / 1.0) }
