/* See bounded_regex.h. The rules for line terminators, ^ $ \Z in both modes, word boundaries, `.`,
 * escapes and what is invalid were checked case by case against NSRegularExpression (ICU); the
 * Unicode tables below come from the Unicode data of the Swift standard library. */
#include "bounded_regex.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BAD_BYTE(b)  (0x110000u + (uint32_t)(b)) /* a byte that is not UTF-8: a character of its own */
#define UNIVERSE_MAX 0x1100FFu                   /* the largest character value */
#define NO_CHAR      0xFFFFFFFFu                 /* before the start or past the end of the text */
#define MAX_COUNT    100000                      /* larger {n,m} counts are unsupported */
#define MAX_DEPTH    100                         /* group nesting */

/* ---- Unicode tables ----------------------------------------------------------------------------
 * Generated; do not edit by hand. To regenerate, run this Swift program (swift gen.swift) and
 * paste its output here:
 *
 *   import Foundation
 *   func ranges(_ test: (Unicode.Scalar) -> Bool) -> [(UInt32, UInt32)] {
 *       var out: [(UInt32, UInt32)] = []
 *       for v in UInt32(0)...0x10FFFF {
 *           guard let s = Unicode.Scalar(v), test(s) else { continue }
 *           if let last = out.last, last.1 + 1 == v { out[out.count - 1].1 = v } else { out.append((v, v)) }
 *       }
 *       return out
 *   }
 *   // \w as ICU: Alphabetic, marks, decimal numbers, connector punctuation, join controls.
 *   let word = ranges { s in
 *       switch s.properties.generalCategory {
 *       case .nonspacingMark, .spacingMark, .enclosingMark, .decimalNumber, .connectorPunctuation: return true
 *       default: return s.properties.isAlphabetic || s.properties.isJoinControl
 *       }
 *   }
 *   let digit = ranges { $0.properties.generalCategory == .decimalNumber }
 *   let space = ranges { $0.properties.isWhitespace }
 *   // Simple case folding key: the one-scalar lowercase of the one-scalar uppercase (so that
 *   // sigma, final sigma; K, k, KELVIN SIGN; s, long s fold together), else the one-scalar
 *   // lowercase, else the character; U+0130 and U+0131 fold only in Turkic, so not here.
 *   func single(_ text: String) -> UInt32? { let u = text.unicodeScalars; return u.count == 1 ? u.first!.value : nil }
 *   func key(_ s: Unicode.Scalar) -> UInt32 {
 *       if s.value == 0x130 || s.value == 0x131 { return s.value }
 *       if let up = single(s.properties.uppercaseMapping), let upScalar = Unicode.Scalar(up),
 *          let low = single(upScalar.properties.lowercaseMapping) {
 *           if let own = single(s.properties.lowercaseMapping), own != s.value, own != low { return own }
 *           return low
 *       }
 *       return single(s.properties.lowercaseMapping) ?? s.value
 *   }
 *   // Runs (first, last, delta, stride): key(c) = c + delta for c = first, first + stride, ... last.
 *   var runs: [(UInt32, UInt32, Int64, UInt32)] = []
 *   var points: [(UInt32, Int64)] = []
 *   for v in UInt32(0)...0x10FFFF {
 *       if let s = Unicode.Scalar(v) { let k = key(s); if k != v { points.append((v, Int64(k) - Int64(v))) } }
 *   }
 *   var i = 0
 *   while i < points.count {
 *       var j = i
 *       let stride: UInt32 = i + 1 < points.count && points[i + 1].1 == points[i].1 && points[i + 1].0 - points[i].0 <= 2
 *           ? points[i + 1].0 - points[i].0 : 1
 *       while j + 1 < points.count && points[j + 1].1 == points[i].1 && points[j + 1].0 == points[j].0 + stride { j += 1 }
 *       runs.append((points[i].0, points[j].0, points[i].1, stride))
 *       i = j + 1
 *   }
 *   func emit(_ name: String, _ items: [String]) {
 *       print("static const \(name)[\(items.count)]\(name.hasPrefix("int32_t") ? "[4]" : "[2]") = {")
 *       var line = "   "
 *       for item in items {
 *           if line.count + item.count + 1 > 110 { print(line); line = "   " }
 *           line += " " + item
 *       }
 *       print(line)
 *       print("};")
 *   }
 *   emit("uint32_t brx_word", word.map { String(format: "{0x%X, 0x%X},", $0.0, $0.1) })
 *   emit("uint32_t brx_digit", digit.map { String(format: "{0x%X, 0x%X},", $0.0, $0.1) })
 *   emit("uint32_t brx_space", space.map { String(format: "{0x%X, 0x%X},", $0.0, $0.1) })
 *   emit("int32_t brx_fold", runs.map { String(format: "{0x%X, 0x%X, %lld, %u},", $0.0, $0.1, $0.2, $0.3) })
 * --------------------------------------------------------------------------------------------- */
static const uint32_t brx_word[802][2] = {
    {0x30, 0x39},       {0x41, 0x5A},       {0x5F, 0x5F},       {0x61, 0x7A},       {0xAA, 0xAA},
    {0xB5, 0xB5},       {0xBA, 0xBA},       {0xC0, 0xD6},       {0xD8, 0xF6},       {0xF8, 0x2C1},
    {0x2C6, 0x2D1},     {0x2E0, 0x2E4},     {0x2EC, 0x2EC},     {0x2EE, 0x2EE},     {0x300, 0x374},
    {0x376, 0x377},     {0x37A, 0x37D},     {0x37F, 0x37F},     {0x386, 0x386},     {0x388, 0x38A},
    {0x38C, 0x38C},     {0x38E, 0x3A1},     {0x3A3, 0x3F5},     {0x3F7, 0x481},     {0x483, 0x52F},
    {0x531, 0x556},     {0x559, 0x559},     {0x560, 0x588},     {0x591, 0x5BD},     {0x5BF, 0x5BF},
    {0x5C1, 0x5C2},     {0x5C4, 0x5C5},     {0x5C7, 0x5C7},     {0x5D0, 0x5EA},     {0x5EF, 0x5F2},
    {0x610, 0x61A},     {0x620, 0x669},     {0x66E, 0x6D3},     {0x6D5, 0x6DC},     {0x6DF, 0x6E8},
    {0x6EA, 0x6FC},     {0x6FF, 0x6FF},     {0x710, 0x74A},     {0x74D, 0x7B1},     {0x7C0, 0x7F5},
    {0x7FA, 0x7FA},     {0x7FD, 0x7FD},     {0x800, 0x82D},     {0x840, 0x85B},     {0x860, 0x86A},
    {0x870, 0x887},     {0x889, 0x88F},     {0x897, 0x8E1},     {0x8E3, 0x963},     {0x966, 0x96F},
    {0x971, 0x983},     {0x985, 0x98C},     {0x98F, 0x990},     {0x993, 0x9A8},     {0x9AA, 0x9B0},
    {0x9B2, 0x9B2},     {0x9B6, 0x9B9},     {0x9BC, 0x9C4},     {0x9C7, 0x9C8},     {0x9CB, 0x9CE},
    {0x9D7, 0x9D7},     {0x9DC, 0x9DD},     {0x9DF, 0x9E3},     {0x9E6, 0x9F1},     {0x9FC, 0x9FC},
    {0x9FE, 0x9FE},     {0xA01, 0xA03},     {0xA05, 0xA0A},     {0xA0F, 0xA10},     {0xA13, 0xA28},
    {0xA2A, 0xA30},     {0xA32, 0xA33},     {0xA35, 0xA36},     {0xA38, 0xA39},     {0xA3C, 0xA3C},
    {0xA3E, 0xA42},     {0xA47, 0xA48},     {0xA4B, 0xA4D},     {0xA51, 0xA51},     {0xA59, 0xA5C},
    {0xA5E, 0xA5E},     {0xA66, 0xA75},     {0xA81, 0xA83},     {0xA85, 0xA8D},     {0xA8F, 0xA91},
    {0xA93, 0xAA8},     {0xAAA, 0xAB0},     {0xAB2, 0xAB3},     {0xAB5, 0xAB9},     {0xABC, 0xAC5},
    {0xAC7, 0xAC9},     {0xACB, 0xACD},     {0xAD0, 0xAD0},     {0xAE0, 0xAE3},     {0xAE6, 0xAEF},
    {0xAF9, 0xAFF},     {0xB01, 0xB03},     {0xB05, 0xB0C},     {0xB0F, 0xB10},     {0xB13, 0xB28},
    {0xB2A, 0xB30},     {0xB32, 0xB33},     {0xB35, 0xB39},     {0xB3C, 0xB44},     {0xB47, 0xB48},
    {0xB4B, 0xB4D},     {0xB55, 0xB57},     {0xB5C, 0xB5D},     {0xB5F, 0xB63},     {0xB66, 0xB6F},
    {0xB71, 0xB71},     {0xB82, 0xB83},     {0xB85, 0xB8A},     {0xB8E, 0xB90},     {0xB92, 0xB95},
    {0xB99, 0xB9A},     {0xB9C, 0xB9C},     {0xB9E, 0xB9F},     {0xBA3, 0xBA4},     {0xBA8, 0xBAA},
    {0xBAE, 0xBB9},     {0xBBE, 0xBC2},     {0xBC6, 0xBC8},     {0xBCA, 0xBCD},     {0xBD0, 0xBD0},
    {0xBD7, 0xBD7},     {0xBE6, 0xBEF},     {0xC00, 0xC0C},     {0xC0E, 0xC10},     {0xC12, 0xC28},
    {0xC2A, 0xC39},     {0xC3C, 0xC44},     {0xC46, 0xC48},     {0xC4A, 0xC4D},     {0xC55, 0xC56},
    {0xC58, 0xC5A},     {0xC5C, 0xC5D},     {0xC60, 0xC63},     {0xC66, 0xC6F},     {0xC80, 0xC83},
    {0xC85, 0xC8C},     {0xC8E, 0xC90},     {0xC92, 0xCA8},     {0xCAA, 0xCB3},     {0xCB5, 0xCB9},
    {0xCBC, 0xCC4},     {0xCC6, 0xCC8},     {0xCCA, 0xCCD},     {0xCD5, 0xCD6},     {0xCDC, 0xCDE},
    {0xCE0, 0xCE3},     {0xCE6, 0xCEF},     {0xCF1, 0xCF3},     {0xD00, 0xD0C},     {0xD0E, 0xD10},
    {0xD12, 0xD44},     {0xD46, 0xD48},     {0xD4A, 0xD4E},     {0xD54, 0xD57},     {0xD5F, 0xD63},
    {0xD66, 0xD6F},     {0xD7A, 0xD7F},     {0xD81, 0xD83},     {0xD85, 0xD96},     {0xD9A, 0xDB1},
    {0xDB3, 0xDBB},     {0xDBD, 0xDBD},     {0xDC0, 0xDC6},     {0xDCA, 0xDCA},     {0xDCF, 0xDD4},
    {0xDD6, 0xDD6},     {0xDD8, 0xDDF},     {0xDE6, 0xDEF},     {0xDF2, 0xDF3},     {0xE01, 0xE3A},
    {0xE40, 0xE4E},     {0xE50, 0xE59},     {0xE81, 0xE82},     {0xE84, 0xE84},     {0xE86, 0xE8A},
    {0xE8C, 0xEA3},     {0xEA5, 0xEA5},     {0xEA7, 0xEBD},     {0xEC0, 0xEC4},     {0xEC6, 0xEC6},
    {0xEC8, 0xECE},     {0xED0, 0xED9},     {0xEDC, 0xEDF},     {0xF00, 0xF00},     {0xF18, 0xF19},
    {0xF20, 0xF29},     {0xF35, 0xF35},     {0xF37, 0xF37},     {0xF39, 0xF39},     {0xF3E, 0xF47},
    {0xF49, 0xF6C},     {0xF71, 0xF84},     {0xF86, 0xF97},     {0xF99, 0xFBC},     {0xFC6, 0xFC6},
    {0x1000, 0x1049},   {0x1050, 0x109D},   {0x10A0, 0x10C5},   {0x10C7, 0x10C7},   {0x10CD, 0x10CD},
    {0x10D0, 0x10FA},   {0x10FC, 0x1248},   {0x124A, 0x124D},   {0x1250, 0x1256},   {0x1258, 0x1258},
    {0x125A, 0x125D},   {0x1260, 0x1288},   {0x128A, 0x128D},   {0x1290, 0x12B0},   {0x12B2, 0x12B5},
    {0x12B8, 0x12BE},   {0x12C0, 0x12C0},   {0x12C2, 0x12C5},   {0x12C8, 0x12D6},   {0x12D8, 0x1310},
    {0x1312, 0x1315},   {0x1318, 0x135A},   {0x135D, 0x135F},   {0x1380, 0x138F},   {0x13A0, 0x13F5},
    {0x13F8, 0x13FD},   {0x1401, 0x166C},   {0x166F, 0x167F},   {0x1681, 0x169A},   {0x16A0, 0x16EA},
    {0x16EE, 0x16F8},   {0x1700, 0x1715},   {0x171F, 0x1734},   {0x1740, 0x1753},   {0x1760, 0x176C},
    {0x176E, 0x1770},   {0x1772, 0x1773},   {0x1780, 0x17D3},   {0x17D7, 0x17D7},   {0x17DC, 0x17DD},
    {0x17E0, 0x17E9},   {0x180B, 0x180D},   {0x180F, 0x1819},   {0x1820, 0x1878},   {0x1880, 0x18AA},
    {0x18B0, 0x18F5},   {0x1900, 0x191E},   {0x1920, 0x192B},   {0x1930, 0x193B},   {0x1946, 0x196D},
    {0x1970, 0x1974},   {0x1980, 0x19AB},   {0x19B0, 0x19C9},   {0x19D0, 0x19D9},   {0x1A00, 0x1A1B},
    {0x1A20, 0x1A5E},   {0x1A60, 0x1A7C},   {0x1A7F, 0x1A89},   {0x1A90, 0x1A99},   {0x1AA7, 0x1AA7},
    {0x1AB0, 0x1ADD},   {0x1AE0, 0x1AEB},   {0x1B00, 0x1B4C},   {0x1B50, 0x1B59},   {0x1B6B, 0x1B73},
    {0x1B80, 0x1BF3},   {0x1C00, 0x1C37},   {0x1C40, 0x1C49},   {0x1C4D, 0x1C7D},   {0x1C80, 0x1C8A},
    {0x1C90, 0x1CBA},   {0x1CBD, 0x1CBF},   {0x1CD0, 0x1CD2},   {0x1CD4, 0x1CFA},   {0x1D00, 0x1F15},
    {0x1F18, 0x1F1D},   {0x1F20, 0x1F45},   {0x1F48, 0x1F4D},   {0x1F50, 0x1F57},   {0x1F59, 0x1F59},
    {0x1F5B, 0x1F5B},   {0x1F5D, 0x1F5D},   {0x1F5F, 0x1F7D},   {0x1F80, 0x1FB4},   {0x1FB6, 0x1FBC},
    {0x1FBE, 0x1FBE},   {0x1FC2, 0x1FC4},   {0x1FC6, 0x1FCC},   {0x1FD0, 0x1FD3},   {0x1FD6, 0x1FDB},
    {0x1FE0, 0x1FEC},   {0x1FF2, 0x1FF4},   {0x1FF6, 0x1FFC},   {0x200C, 0x200D},   {0x203F, 0x2040},
    {0x2054, 0x2054},   {0x2071, 0x2071},   {0x207F, 0x207F},   {0x2090, 0x209C},   {0x20D0, 0x20F0},
    {0x2102, 0x2102},   {0x2107, 0x2107},   {0x210A, 0x2113},   {0x2115, 0x2115},   {0x2119, 0x211D},
    {0x2124, 0x2124},   {0x2126, 0x2126},   {0x2128, 0x2128},   {0x212A, 0x212D},   {0x212F, 0x2139},
    {0x213C, 0x213F},   {0x2145, 0x2149},   {0x214E, 0x214E},   {0x2160, 0x2188},   {0x24B6, 0x24E9},
    {0x2C00, 0x2CE4},   {0x2CEB, 0x2CF3},   {0x2D00, 0x2D25},   {0x2D27, 0x2D27},   {0x2D2D, 0x2D2D},
    {0x2D30, 0x2D67},   {0x2D6F, 0x2D6F},   {0x2D7F, 0x2D96},   {0x2DA0, 0x2DA6},   {0x2DA8, 0x2DAE},
    {0x2DB0, 0x2DB6},   {0x2DB8, 0x2DBE},   {0x2DC0, 0x2DC6},   {0x2DC8, 0x2DCE},   {0x2DD0, 0x2DD6},
    {0x2DD8, 0x2DDE},   {0x2DE0, 0x2DFF},   {0x2E2F, 0x2E2F},   {0x3005, 0x3007},   {0x3021, 0x302F},
    {0x3031, 0x3035},   {0x3038, 0x303C},   {0x3041, 0x3096},   {0x3099, 0x309A},   {0x309D, 0x309F},
    {0x30A1, 0x30FA},   {0x30FC, 0x30FF},   {0x3105, 0x312F},   {0x3131, 0x318E},   {0x31A0, 0x31BF},
    {0x31F0, 0x31FF},   {0x3400, 0x4DBF},   {0x4E00, 0xA48C},   {0xA4D0, 0xA4FD},   {0xA500, 0xA60C},
    {0xA610, 0xA62B},   {0xA640, 0xA672},   {0xA674, 0xA67D},   {0xA67F, 0xA6F1},   {0xA717, 0xA71F},
    {0xA722, 0xA788},   {0xA78B, 0xA7DC},   {0xA7F1, 0xA827},   {0xA82C, 0xA82C},   {0xA840, 0xA873},
    {0xA880, 0xA8C5},   {0xA8D0, 0xA8D9},   {0xA8E0, 0xA8F7},   {0xA8FB, 0xA8FB},   {0xA8FD, 0xA92D},
    {0xA930, 0xA953},   {0xA960, 0xA97C},   {0xA980, 0xA9C0},   {0xA9CF, 0xA9D9},   {0xA9E0, 0xA9FE},
    {0xAA00, 0xAA36},   {0xAA40, 0xAA4D},   {0xAA50, 0xAA59},   {0xAA60, 0xAA76},   {0xAA7A, 0xAAC2},
    {0xAADB, 0xAADD},   {0xAAE0, 0xAAEF},   {0xAAF2, 0xAAF6},   {0xAB01, 0xAB06},   {0xAB09, 0xAB0E},
    {0xAB11, 0xAB16},   {0xAB20, 0xAB26},   {0xAB28, 0xAB2E},   {0xAB30, 0xAB5A},   {0xAB5C, 0xAB69},
    {0xAB70, 0xABEA},   {0xABEC, 0xABED},   {0xABF0, 0xABF9},   {0xAC00, 0xD7A3},   {0xD7B0, 0xD7C6},
    {0xD7CB, 0xD7FB},   {0xF900, 0xFA6D},   {0xFA70, 0xFAD9},   {0xFB00, 0xFB06},   {0xFB13, 0xFB17},
    {0xFB1D, 0xFB28},   {0xFB2A, 0xFB36},   {0xFB38, 0xFB3C},   {0xFB3E, 0xFB3E},   {0xFB40, 0xFB41},
    {0xFB43, 0xFB44},   {0xFB46, 0xFBB1},   {0xFBD3, 0xFD3D},   {0xFD50, 0xFD8F},   {0xFD92, 0xFDC7},
    {0xFDF0, 0xFDFB},   {0xFE00, 0xFE0F},   {0xFE20, 0xFE2F},   {0xFE33, 0xFE34},   {0xFE4D, 0xFE4F},
    {0xFE70, 0xFE74},   {0xFE76, 0xFEFC},   {0xFF10, 0xFF19},   {0xFF21, 0xFF3A},   {0xFF3F, 0xFF3F},
    {0xFF41, 0xFF5A},   {0xFF66, 0xFFBE},   {0xFFC2, 0xFFC7},   {0xFFCA, 0xFFCF},   {0xFFD2, 0xFFD7},
    {0xFFDA, 0xFFDC},   {0x10000, 0x1000B}, {0x1000D, 0x10026}, {0x10028, 0x1003A}, {0x1003C, 0x1003D},
    {0x1003F, 0x1004D}, {0x10050, 0x1005D}, {0x10080, 0x100FA}, {0x10140, 0x10174}, {0x101FD, 0x101FD},
    {0x10280, 0x1029C}, {0x102A0, 0x102D0}, {0x102E0, 0x102E0}, {0x10300, 0x1031F}, {0x1032D, 0x1034A},
    {0x10350, 0x1037A}, {0x10380, 0x1039D}, {0x103A0, 0x103C3}, {0x103C8, 0x103CF}, {0x103D1, 0x103D5},
    {0x10400, 0x1049D}, {0x104A0, 0x104A9}, {0x104B0, 0x104D3}, {0x104D8, 0x104FB}, {0x10500, 0x10527},
    {0x10530, 0x10563}, {0x10570, 0x1057A}, {0x1057C, 0x1058A}, {0x1058C, 0x10592}, {0x10594, 0x10595},
    {0x10597, 0x105A1}, {0x105A3, 0x105B1}, {0x105B3, 0x105B9}, {0x105BB, 0x105BC}, {0x105C0, 0x105F3},
    {0x10600, 0x10736}, {0x10740, 0x10755}, {0x10760, 0x10767}, {0x10780, 0x10785}, {0x10787, 0x107B0},
    {0x107B2, 0x107BA}, {0x10800, 0x10805}, {0x10808, 0x10808}, {0x1080A, 0x10835}, {0x10837, 0x10838},
    {0x1083C, 0x1083C}, {0x1083F, 0x10855}, {0x10860, 0x10876}, {0x10880, 0x1089E}, {0x108E0, 0x108F2},
    {0x108F4, 0x108F5}, {0x10900, 0x10915}, {0x10920, 0x10939}, {0x10940, 0x10959}, {0x10980, 0x109B7},
    {0x109BE, 0x109BF}, {0x10A00, 0x10A03}, {0x10A05, 0x10A06}, {0x10A0C, 0x10A13}, {0x10A15, 0x10A17},
    {0x10A19, 0x10A35}, {0x10A38, 0x10A3A}, {0x10A3F, 0x10A3F}, {0x10A60, 0x10A7C}, {0x10A80, 0x10A9C},
    {0x10AC0, 0x10AC7}, {0x10AC9, 0x10AE6}, {0x10B00, 0x10B35}, {0x10B40, 0x10B55}, {0x10B60, 0x10B72},
    {0x10B80, 0x10B91}, {0x10C00, 0x10C48}, {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x10D00, 0x10D27},
    {0x10D30, 0x10D39}, {0x10D40, 0x10D65}, {0x10D69, 0x10D6D}, {0x10D6F, 0x10D85}, {0x10E80, 0x10EA9},
    {0x10EAB, 0x10EAC}, {0x10EB0, 0x10EB1}, {0x10EC2, 0x10EC7}, {0x10EFA, 0x10F1C}, {0x10F27, 0x10F27},
    {0x10F30, 0x10F50}, {0x10F70, 0x10F85}, {0x10FB0, 0x10FC4}, {0x10FE0, 0x10FF6}, {0x11000, 0x11046},
    {0x11066, 0x11075}, {0x1107F, 0x110BA}, {0x110C2, 0x110C2}, {0x110D0, 0x110E8}, {0x110F0, 0x110F9},
    {0x11100, 0x11134}, {0x11136, 0x1113F}, {0x11144, 0x11147}, {0x11150, 0x11173}, {0x11176, 0x11176},
    {0x11180, 0x111C4}, {0x111C9, 0x111CC}, {0x111CE, 0x111DA}, {0x111DC, 0x111DC}, {0x11200, 0x11211},
    {0x11213, 0x11237}, {0x1123E, 0x11241}, {0x11280, 0x11286}, {0x11288, 0x11288}, {0x1128A, 0x1128D},
    {0x1128F, 0x1129D}, {0x1129F, 0x112A8}, {0x112B0, 0x112EA}, {0x112F0, 0x112F9}, {0x11300, 0x11303},
    {0x11305, 0x1130C}, {0x1130F, 0x11310}, {0x11313, 0x11328}, {0x1132A, 0x11330}, {0x11332, 0x11333},
    {0x11335, 0x11339}, {0x1133B, 0x11344}, {0x11347, 0x11348}, {0x1134B, 0x1134D}, {0x11350, 0x11350},
    {0x11357, 0x11357}, {0x1135D, 0x11363}, {0x11366, 0x1136C}, {0x11370, 0x11374}, {0x11380, 0x11389},
    {0x1138B, 0x1138B}, {0x1138E, 0x1138E}, {0x11390, 0x113B5}, {0x113B7, 0x113C0}, {0x113C2, 0x113C2},
    {0x113C5, 0x113C5}, {0x113C7, 0x113CA}, {0x113CC, 0x113D3}, {0x113E1, 0x113E2}, {0x11400, 0x1144A},
    {0x11450, 0x11459}, {0x1145E, 0x11461}, {0x11480, 0x114C5}, {0x114C7, 0x114C7}, {0x114D0, 0x114D9},
    {0x11580, 0x115B5}, {0x115B8, 0x115C0}, {0x115D8, 0x115DD}, {0x11600, 0x11640}, {0x11644, 0x11644},
    {0x11650, 0x11659}, {0x11680, 0x116B8}, {0x116C0, 0x116C9}, {0x116D0, 0x116E3}, {0x11700, 0x1171A},
    {0x1171D, 0x1172B}, {0x11730, 0x11739}, {0x11740, 0x11746}, {0x11800, 0x1183A}, {0x118A0, 0x118E9},
    {0x118FF, 0x11906}, {0x11909, 0x11909}, {0x1190C, 0x11913}, {0x11915, 0x11916}, {0x11918, 0x11935},
    {0x11937, 0x11938}, {0x1193B, 0x11943}, {0x11950, 0x11959}, {0x119A0, 0x119A7}, {0x119AA, 0x119D7},
    {0x119DA, 0x119E1}, {0x119E3, 0x119E4}, {0x11A00, 0x11A3E}, {0x11A47, 0x11A47}, {0x11A50, 0x11A99},
    {0x11A9D, 0x11A9D}, {0x11AB0, 0x11AF8}, {0x11B60, 0x11B67}, {0x11BC0, 0x11BE0}, {0x11BF0, 0x11BF9},
    {0x11C00, 0x11C08}, {0x11C0A, 0x11C36}, {0x11C38, 0x11C40}, {0x11C50, 0x11C59}, {0x11C72, 0x11C8F},
    {0x11C92, 0x11CA7}, {0x11CA9, 0x11CB6}, {0x11D00, 0x11D06}, {0x11D08, 0x11D09}, {0x11D0B, 0x11D36},
    {0x11D3A, 0x11D3A}, {0x11D3C, 0x11D3D}, {0x11D3F, 0x11D47}, {0x11D50, 0x11D59}, {0x11D60, 0x11D65},
    {0x11D67, 0x11D68}, {0x11D6A, 0x11D8E}, {0x11D90, 0x11D91}, {0x11D93, 0x11D98}, {0x11DA0, 0x11DA9},
    {0x11DB0, 0x11DDB}, {0x11DE0, 0x11DE9}, {0x11EE0, 0x11EF6}, {0x11F00, 0x11F10}, {0x11F12, 0x11F3A},
    {0x11F3E, 0x11F42}, {0x11F50, 0x11F5A}, {0x11FB0, 0x11FB0}, {0x12000, 0x12399}, {0x12400, 0x1246E},
    {0x12480, 0x12543}, {0x12F90, 0x12FF0}, {0x13000, 0x1342F}, {0x13440, 0x13455}, {0x13460, 0x143FA},
    {0x14400, 0x14646}, {0x16100, 0x16139}, {0x16800, 0x16A38}, {0x16A40, 0x16A5E}, {0x16A60, 0x16A69},
    {0x16A70, 0x16ABE}, {0x16AC0, 0x16AC9}, {0x16AD0, 0x16AED}, {0x16AF0, 0x16AF4}, {0x16B00, 0x16B36},
    {0x16B40, 0x16B43}, {0x16B50, 0x16B59}, {0x16B63, 0x16B77}, {0x16B7D, 0x16B8F}, {0x16D40, 0x16D6C},
    {0x16D70, 0x16D79}, {0x16E40, 0x16E7F}, {0x16EA0, 0x16EB8}, {0x16EBB, 0x16ED3}, {0x16F00, 0x16F4A},
    {0x16F4F, 0x16F87}, {0x16F8F, 0x16F9F}, {0x16FE0, 0x16FE1}, {0x16FE3, 0x16FE4}, {0x16FF0, 0x16FF6},
    {0x17000, 0x18CD5}, {0x18CFF, 0x18D1E}, {0x18D80, 0x18DF2}, {0x1AFF0, 0x1AFF3}, {0x1AFF5, 0x1AFFB},
    {0x1AFFD, 0x1AFFE}, {0x1B000, 0x1B122}, {0x1B132, 0x1B132}, {0x1B150, 0x1B152}, {0x1B155, 0x1B155},
    {0x1B164, 0x1B167}, {0x1B170, 0x1B2FB}, {0x1BC00, 0x1BC6A}, {0x1BC70, 0x1BC7C}, {0x1BC80, 0x1BC88},
    {0x1BC90, 0x1BC99}, {0x1BC9D, 0x1BC9E}, {0x1CCF0, 0x1CCF9}, {0x1CF00, 0x1CF2D}, {0x1CF30, 0x1CF46},
    {0x1D165, 0x1D169}, {0x1D16D, 0x1D172}, {0x1D17B, 0x1D182}, {0x1D185, 0x1D18B}, {0x1D1AA, 0x1D1AD},
    {0x1D242, 0x1D244}, {0x1D400, 0x1D454}, {0x1D456, 0x1D49C}, {0x1D49E, 0x1D49F}, {0x1D4A2, 0x1D4A2},
    {0x1D4A5, 0x1D4A6}, {0x1D4A9, 0x1D4AC}, {0x1D4AE, 0x1D4B9}, {0x1D4BB, 0x1D4BB}, {0x1D4BD, 0x1D4C3},
    {0x1D4C5, 0x1D505}, {0x1D507, 0x1D50A}, {0x1D50D, 0x1D514}, {0x1D516, 0x1D51C}, {0x1D51E, 0x1D539},
    {0x1D53B, 0x1D53E}, {0x1D540, 0x1D544}, {0x1D546, 0x1D546}, {0x1D54A, 0x1D550}, {0x1D552, 0x1D6A5},
    {0x1D6A8, 0x1D6C0}, {0x1D6C2, 0x1D6DA}, {0x1D6DC, 0x1D6FA}, {0x1D6FC, 0x1D714}, {0x1D716, 0x1D734},
    {0x1D736, 0x1D74E}, {0x1D750, 0x1D76E}, {0x1D770, 0x1D788}, {0x1D78A, 0x1D7A8}, {0x1D7AA, 0x1D7C2},
    {0x1D7C4, 0x1D7CB}, {0x1D7CE, 0x1D7FF}, {0x1DA00, 0x1DA36}, {0x1DA3B, 0x1DA6C}, {0x1DA75, 0x1DA75},
    {0x1DA84, 0x1DA84}, {0x1DA9B, 0x1DA9F}, {0x1DAA1, 0x1DAAF}, {0x1DF00, 0x1DF1E}, {0x1DF25, 0x1DF2A},
    {0x1E000, 0x1E006}, {0x1E008, 0x1E018}, {0x1E01B, 0x1E021}, {0x1E023, 0x1E024}, {0x1E026, 0x1E02A},
    {0x1E030, 0x1E06D}, {0x1E08F, 0x1E08F}, {0x1E100, 0x1E12C}, {0x1E130, 0x1E13D}, {0x1E140, 0x1E149},
    {0x1E14E, 0x1E14E}, {0x1E290, 0x1E2AE}, {0x1E2C0, 0x1E2F9}, {0x1E4D0, 0x1E4F9}, {0x1E5D0, 0x1E5FA},
    {0x1E6C0, 0x1E6DE}, {0x1E6E0, 0x1E6F5}, {0x1E6FE, 0x1E6FF}, {0x1E7E0, 0x1E7E6}, {0x1E7E8, 0x1E7EB},
    {0x1E7ED, 0x1E7EE}, {0x1E7F0, 0x1E7FE}, {0x1E800, 0x1E8C4}, {0x1E8D0, 0x1E8D6}, {0x1E900, 0x1E94B},
    {0x1E950, 0x1E959}, {0x1EE00, 0x1EE03}, {0x1EE05, 0x1EE1F}, {0x1EE21, 0x1EE22}, {0x1EE24, 0x1EE24},
    {0x1EE27, 0x1EE27}, {0x1EE29, 0x1EE32}, {0x1EE34, 0x1EE37}, {0x1EE39, 0x1EE39}, {0x1EE3B, 0x1EE3B},
    {0x1EE42, 0x1EE42}, {0x1EE47, 0x1EE47}, {0x1EE49, 0x1EE49}, {0x1EE4B, 0x1EE4B}, {0x1EE4D, 0x1EE4F},
    {0x1EE51, 0x1EE52}, {0x1EE54, 0x1EE54}, {0x1EE57, 0x1EE57}, {0x1EE59, 0x1EE59}, {0x1EE5B, 0x1EE5B},
    {0x1EE5D, 0x1EE5D}, {0x1EE5F, 0x1EE5F}, {0x1EE61, 0x1EE62}, {0x1EE64, 0x1EE64}, {0x1EE67, 0x1EE6A},
    {0x1EE6C, 0x1EE72}, {0x1EE74, 0x1EE77}, {0x1EE79, 0x1EE7C}, {0x1EE7E, 0x1EE7E}, {0x1EE80, 0x1EE89},
    {0x1EE8B, 0x1EE9B}, {0x1EEA1, 0x1EEA3}, {0x1EEA5, 0x1EEA9}, {0x1EEAB, 0x1EEBB}, {0x1F130, 0x1F149},
    {0x1F150, 0x1F169}, {0x1F170, 0x1F189}, {0x1FBF0, 0x1FBF9}, {0x20000, 0x2A6DF}, {0x2A700, 0x2B81D},
    {0x2B820, 0x2CEAD}, {0x2CEB0, 0x2EBE0}, {0x2EBF0, 0x2EE5D}, {0x2F800, 0x2FA1D}, {0x30000, 0x3134A},
    {0x31350, 0x33479}, {0xE0100, 0xE01EF},
};
static const uint32_t brx_digit[72][2] = {
    {0x30, 0x39},       {0x660, 0x669},     {0x6F0, 0x6F9},     {0x7C0, 0x7C9},     {0x966, 0x96F},
    {0x9E6, 0x9EF},     {0xA66, 0xA6F},     {0xAE6, 0xAEF},     {0xB66, 0xB6F},     {0xBE6, 0xBEF},
    {0xC66, 0xC6F},     {0xCE6, 0xCEF},     {0xD66, 0xD6F},     {0xDE6, 0xDEF},     {0xE50, 0xE59},
    {0xED0, 0xED9},     {0xF20, 0xF29},     {0x1040, 0x1049},   {0x1090, 0x1099},   {0x17E0, 0x17E9},
    {0x1810, 0x1819},   {0x1946, 0x194F},   {0x19D0, 0x19D9},   {0x1A80, 0x1A89},   {0x1A90, 0x1A99},
    {0x1B50, 0x1B59},   {0x1BB0, 0x1BB9},   {0x1C40, 0x1C49},   {0x1C50, 0x1C59},   {0xA620, 0xA629},
    {0xA8D0, 0xA8D9},   {0xA900, 0xA909},   {0xA9D0, 0xA9D9},   {0xA9F0, 0xA9F9},   {0xAA50, 0xAA59},
    {0xABF0, 0xABF9},   {0xFF10, 0xFF19},   {0x104A0, 0x104A9}, {0x10D30, 0x10D39}, {0x10D40, 0x10D49},
    {0x11066, 0x1106F}, {0x110F0, 0x110F9}, {0x11136, 0x1113F}, {0x111D0, 0x111D9}, {0x112F0, 0x112F9},
    {0x11450, 0x11459}, {0x114D0, 0x114D9}, {0x11650, 0x11659}, {0x116C0, 0x116C9}, {0x116D0, 0x116E3},
    {0x11730, 0x11739}, {0x118E0, 0x118E9}, {0x11950, 0x11959}, {0x11BF0, 0x11BF9}, {0x11C50, 0x11C59},
    {0x11D50, 0x11D59}, {0x11DA0, 0x11DA9}, {0x11DE0, 0x11DE9}, {0x11F50, 0x11F59}, {0x16130, 0x16139},
    {0x16A60, 0x16A69}, {0x16AC0, 0x16AC9}, {0x16B50, 0x16B59}, {0x16D70, 0x16D79}, {0x1CCF0, 0x1CCF9},
    {0x1D7CE, 0x1D7FF}, {0x1E140, 0x1E149}, {0x1E2F0, 0x1E2F9}, {0x1E4F0, 0x1E4F9}, {0x1E5F1, 0x1E5FA},
    {0x1E950, 0x1E959}, {0x1FBF0, 0x1FBF9},
};
static const uint32_t brx_space[10][2] = {
    {0x9, 0xD},       {0x20, 0x20},     {0x85, 0x85},     {0xA0, 0xA0},     {0x1680, 0x1680},
    {0x2000, 0x200A}, {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000},
};
static const int32_t brx_fold[206][4] = {
    {0x41, 0x5A, 32, 1},         {0xB5, 0xB5, 775, 1},        {0xC0, 0xD6, 32, 1},
    {0xD8, 0xDE, 32, 1},         {0x100, 0x12E, 1, 2},        {0x132, 0x136, 1, 2},
    {0x139, 0x147, 1, 2},        {0x14A, 0x176, 1, 2},        {0x178, 0x178, -121, 1},
    {0x179, 0x17D, 1, 2},        {0x17F, 0x17F, -268, 1},     {0x181, 0x181, 210, 1},
    {0x182, 0x184, 1, 2},        {0x186, 0x186, 206, 1},      {0x187, 0x187, 1, 1},
    {0x189, 0x18A, 205, 1},      {0x18B, 0x18B, 1, 1},        {0x18E, 0x18E, 79, 1},
    {0x18F, 0x18F, 202, 1},      {0x190, 0x190, 203, 1},      {0x191, 0x191, 1, 1},
    {0x193, 0x193, 205, 1},      {0x194, 0x194, 207, 1},      {0x196, 0x196, 211, 1},
    {0x197, 0x197, 209, 1},      {0x198, 0x198, 1, 1},        {0x19C, 0x19C, 211, 1},
    {0x19D, 0x19D, 213, 1},      {0x19F, 0x19F, 214, 1},      {0x1A0, 0x1A4, 1, 2},
    {0x1A6, 0x1A6, 218, 1},      {0x1A7, 0x1A7, 1, 1},        {0x1A9, 0x1A9, 218, 1},
    {0x1AC, 0x1AC, 1, 1},        {0x1AE, 0x1AE, 218, 1},      {0x1AF, 0x1AF, 1, 1},
    {0x1B1, 0x1B2, 217, 1},      {0x1B3, 0x1B5, 1, 2},        {0x1B7, 0x1B7, 219, 1},
    {0x1B8, 0x1B8, 1, 1},        {0x1BC, 0x1BC, 1, 1},        {0x1C4, 0x1C4, 2, 1},
    {0x1C5, 0x1C5, 1, 1},        {0x1C7, 0x1C7, 2, 1},        {0x1C8, 0x1C8, 1, 1},
    {0x1CA, 0x1CA, 2, 1},        {0x1CB, 0x1DB, 1, 2},        {0x1DE, 0x1EE, 1, 2},
    {0x1F1, 0x1F1, 2, 1},        {0x1F2, 0x1F4, 1, 2},        {0x1F6, 0x1F6, -97, 1},
    {0x1F7, 0x1F7, -56, 1},      {0x1F8, 0x21E, 1, 2},        {0x220, 0x220, -130, 1},
    {0x222, 0x232, 1, 2},        {0x23A, 0x23A, 10795, 1},    {0x23B, 0x23B, 1, 1},
    {0x23D, 0x23D, -163, 1},     {0x23E, 0x23E, 10792, 1},    {0x241, 0x241, 1, 1},
    {0x243, 0x243, -195, 1},     {0x244, 0x244, 69, 1},       {0x245, 0x245, 71, 1},
    {0x246, 0x24E, 1, 2},        {0x345, 0x345, 116, 1},      {0x370, 0x372, 1, 2},
    {0x376, 0x376, 1, 1},        {0x37F, 0x37F, 116, 1},      {0x386, 0x386, 38, 1},
    {0x388, 0x38A, 37, 1},       {0x38C, 0x38C, 64, 1},       {0x38E, 0x38F, 63, 1},
    {0x391, 0x3A1, 32, 1},       {0x3A3, 0x3AB, 32, 1},       {0x3C2, 0x3C2, 1, 1},
    {0x3CF, 0x3CF, 8, 1},        {0x3D0, 0x3D0, -30, 1},      {0x3D1, 0x3D1, -25, 1},
    {0x3D5, 0x3D5, -15, 1},      {0x3D6, 0x3D6, -22, 1},      {0x3D8, 0x3EE, 1, 2},
    {0x3F0, 0x3F0, -54, 1},      {0x3F1, 0x3F1, -48, 1},      {0x3F4, 0x3F4, -60, 1},
    {0x3F5, 0x3F5, -64, 1},      {0x3F7, 0x3F7, 1, 1},        {0x3F9, 0x3F9, -7, 1},
    {0x3FA, 0x3FA, 1, 1},        {0x3FD, 0x3FF, -130, 1},     {0x400, 0x40F, 80, 1},
    {0x410, 0x42F, 32, 1},       {0x460, 0x480, 1, 2},        {0x48A, 0x4BE, 1, 2},
    {0x4C0, 0x4C0, 15, 1},       {0x4C1, 0x4CD, 1, 2},        {0x4D0, 0x52E, 1, 2},
    {0x531, 0x556, 48, 1},       {0x10A0, 0x10C5, 7264, 1},   {0x10C7, 0x10C7, 7264, 1},
    {0x10CD, 0x10CD, 7264, 1},   {0x13A0, 0x13EF, 38864, 1},  {0x13F0, 0x13F5, 8, 1},
    {0x1C80, 0x1C80, -6222, 1},  {0x1C81, 0x1C81, -6221, 1},  {0x1C82, 0x1C82, -6212, 1},
    {0x1C83, 0x1C84, -6210, 1},  {0x1C85, 0x1C85, -6211, 1},  {0x1C86, 0x1C86, -6204, 1},
    {0x1C87, 0x1C87, -6180, 1},  {0x1C88, 0x1C88, 35267, 1},  {0x1C89, 0x1C89, 1, 1},
    {0x1C90, 0x1CBA, -3008, 1},  {0x1CBD, 0x1CBF, -3008, 1},  {0x1E00, 0x1E94, 1, 2},
    {0x1E9B, 0x1E9B, -58, 1},    {0x1E9E, 0x1E9E, -7615, 1},  {0x1EA0, 0x1EFE, 1, 2},
    {0x1F08, 0x1F0F, -8, 1},     {0x1F18, 0x1F1D, -8, 1},     {0x1F28, 0x1F2F, -8, 1},
    {0x1F38, 0x1F3F, -8, 1},     {0x1F48, 0x1F4D, -8, 1},     {0x1F59, 0x1F5F, -8, 2},
    {0x1F68, 0x1F6F, -8, 1},     {0x1F88, 0x1F8F, -8, 1},     {0x1F98, 0x1F9F, -8, 1},
    {0x1FA8, 0x1FAF, -8, 1},     {0x1FB8, 0x1FB9, -8, 1},     {0x1FBA, 0x1FBB, -74, 1},
    {0x1FBC, 0x1FBC, -9, 1},     {0x1FBE, 0x1FBE, -7173, 1},  {0x1FC8, 0x1FCB, -86, 1},
    {0x1FCC, 0x1FCC, -9, 1},     {0x1FD8, 0x1FD9, -8, 1},     {0x1FDA, 0x1FDB, -100, 1},
    {0x1FE8, 0x1FE9, -8, 1},     {0x1FEA, 0x1FEB, -112, 1},   {0x1FEC, 0x1FEC, -7, 1},
    {0x1FF8, 0x1FF9, -128, 1},   {0x1FFA, 0x1FFB, -126, 1},   {0x1FFC, 0x1FFC, -9, 1},
    {0x2126, 0x2126, -7517, 1},  {0x212A, 0x212A, -8383, 1},  {0x212B, 0x212B, -8262, 1},
    {0x2132, 0x2132, 28, 1},     {0x2160, 0x216F, 16, 1},     {0x2183, 0x2183, 1, 1},
    {0x24B6, 0x24CF, 26, 1},     {0x2C00, 0x2C2F, 48, 1},     {0x2C60, 0x2C60, 1, 1},
    {0x2C62, 0x2C62, -10743, 1}, {0x2C63, 0x2C63, -3814, 1},  {0x2C64, 0x2C64, -10727, 1},
    {0x2C67, 0x2C6B, 1, 2},      {0x2C6D, 0x2C6D, -10780, 1}, {0x2C6E, 0x2C6E, -10749, 1},
    {0x2C6F, 0x2C6F, -10783, 1}, {0x2C70, 0x2C70, -10782, 1}, {0x2C72, 0x2C72, 1, 1},
    {0x2C75, 0x2C75, 1, 1},      {0x2C7E, 0x2C7F, -10815, 1}, {0x2C80, 0x2CE2, 1, 2},
    {0x2CEB, 0x2CED, 1, 2},      {0x2CF2, 0x2CF2, 1, 1},      {0xA640, 0xA66C, 1, 2},
    {0xA680, 0xA69A, 1, 2},      {0xA722, 0xA72E, 1, 2},      {0xA732, 0xA76E, 1, 2},
    {0xA779, 0xA77B, 1, 2},      {0xA77D, 0xA77D, -35332, 1}, {0xA77E, 0xA786, 1, 2},
    {0xA78B, 0xA78B, 1, 1},      {0xA78D, 0xA78D, -42280, 1}, {0xA790, 0xA792, 1, 2},
    {0xA796, 0xA7A8, 1, 2},      {0xA7AA, 0xA7AA, -42308, 1}, {0xA7AB, 0xA7AB, -42319, 1},
    {0xA7AC, 0xA7AC, -42315, 1}, {0xA7AD, 0xA7AD, -42305, 1}, {0xA7AE, 0xA7AE, -42308, 1},
    {0xA7B0, 0xA7B0, -42258, 1}, {0xA7B1, 0xA7B1, -42282, 1}, {0xA7B2, 0xA7B2, -42261, 1},
    {0xA7B3, 0xA7B3, 928, 1},    {0xA7B4, 0xA7C2, 1, 2},      {0xA7C4, 0xA7C4, -48, 1},
    {0xA7C5, 0xA7C5, -42307, 1}, {0xA7C6, 0xA7C6, -35384, 1}, {0xA7C7, 0xA7C9, 1, 2},
    {0xA7CB, 0xA7CB, -42343, 1}, {0xA7CC, 0xA7DA, 1, 2},      {0xA7DC, 0xA7DC, -42561, 1},
    {0xA7F5, 0xA7F5, 1, 1},      {0xFF21, 0xFF3A, 32, 1},     {0x10400, 0x10427, 40, 1},
    {0x104B0, 0x104D3, 40, 1},   {0x10570, 0x1057A, 39, 1},   {0x1057C, 0x1058A, 39, 1},
    {0x1058C, 0x10592, 39, 1},   {0x10594, 0x10595, 39, 1},   {0x10C80, 0x10CB2, 64, 1},
    {0x10D50, 0x10D65, 32, 1},   {0x118A0, 0x118BF, 32, 1},   {0x16E40, 0x16E5F, 32, 1},
    {0x16EA0, 0x16EB8, 27, 1},   {0x1E900, 0x1E921, 34, 1},
};

/* ---- characters --------------------------------------------------------------------------- */

/* The character at text[at] (at < length) and its length in bytes; a byte that does not start a
 * valid UTF-8 sequence is BAD_BYTE(byte), one byte long. */
static uint32_t decode(const uint8_t *text, size_t length, size_t at, size_t *size) {
    uint8_t b = text[at];
    uint32_t c, minimum;
    size_t need;
    *size = 1;
    if (b < 0x80)
        return b;
    if (b >= 0xC2 && b <= 0xDF) {
        need = 1;
        c = b & 0x1Fu;
        minimum = 0x80;
    } else if (b >= 0xE0 && b <= 0xEF) {
        need = 2;
        c = b & 0x0Fu;
        minimum = 0x800;
    } else if (b >= 0xF0 && b <= 0xF4) {
        need = 3;
        c = b & 0x07u;
        minimum = 0x10000;
    } else
        return BAD_BYTE(b);
    for (size_t i = 1; i <= need; i++) {
        if (at + i >= length || (text[at + i] & 0xC0) != 0x80)
            return BAD_BYTE(b);
        c = (c << 6) | (text[at + i] & 0x3Fu);
    }
    if (c < minimum || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        return BAD_BYTE(b);
    *size = need + 1;
    return c;
}

/* ICU's line terminators; with the d flag only \n. */
static bool line_terminator(uint32_t c, bool unix_lines) {
    if (unix_lines)
        return c == 0x0A;
    return (c >= 0x0A && c <= 0x0D) || c == 0x85 || c == 0x2028 || c == 0x2029;
}

static int table_find(const uint32_t (*table)[2], int count, uint32_t c) {
    int lo = 0, hi = count - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        if (c < table[mid][0])
            hi = mid - 1;
        else if (c > table[mid][1])
            lo = mid + 1;
        else
            return mid;
    }
    return -1;
}

static bool is_word(uint32_t c) {
    return c != NO_CHAR && table_find(brx_word, (int)(sizeof brx_word / sizeof brx_word[0]), c) >= 0;
}

/* ---- character sets: sorted, merged ranges ------------------------------------------------- */

typedef struct {
    uint32_t lo, hi;
} cp_range_t;
typedef struct {
    cp_range_t *ranges;
    int count, capacity;
} cp_set_t;

static bool set_add(cp_set_t *s, uint32_t lo, uint32_t hi) {
    if (s->count == s->capacity) {
        int grown = s->capacity ? s->capacity * 2 : 8;
        cp_range_t *ranges = realloc(s->ranges, (size_t)grown * sizeof *ranges);
        if (!ranges)
            return false;
        s->ranges = ranges;
        s->capacity = grown;
    }
    s->ranges[s->count].lo = lo;
    s->ranges[s->count].hi = hi;
    s->count++;
    return true;
}

static int range_order(const void *a, const void *b) {
    const cp_range_t *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo ? 1 : 0;
}

static void set_normalize(cp_set_t *s) {
    if (s->count < 2)
        return;
    qsort(s->ranges, (size_t)s->count, sizeof *s->ranges, range_order);
    int out = 0;
    for (int i = 1; i < s->count; i++) {
        if (s->ranges[i].lo <= s->ranges[out].hi || s->ranges[i].lo == s->ranges[out].hi + 1) {
            if (s->ranges[i].hi > s->ranges[out].hi)
                s->ranges[out].hi = s->ranges[i].hi;
        } else {
            s->ranges[++out] = s->ranges[i];
        }
    }
    s->count = out + 1;
}

/* Requires a normalized set. */
static bool set_has(const cp_set_t *s, uint32_t c) {
    int lo = 0, hi = s->count - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        if (c < s->ranges[mid].lo)
            hi = mid - 1;
        else if (c > s->ranges[mid].hi)
            lo = mid + 1;
        else
            return true;
    }
    return false;
}

/* Everything in [0, UNIVERSE_MAX] that the set does not hold. */
static bool set_complement(cp_set_t *s) {
    set_normalize(s);
    cp_set_t out = {NULL, 0, 0};
    uint32_t next = 0;
    bool ok = true;
    for (int i = 0; ok && i < s->count; i++) {
        if (s->ranges[i].lo > next)
            ok = set_add(&out, next, s->ranges[i].lo - 1);
        next = s->ranges[i].hi + 1;
    }
    if (ok && next <= UNIVERSE_MAX)
        ok = set_add(&out, next, UNIVERSE_MAX);
    if (!ok) {
        free(out.ranges);
        return false;
    }
    free(s->ranges);
    *s = out;
    return true;
}

static bool set_add_table(cp_set_t *s, const uint32_t (*table)[2], int count, bool negated) {
    cp_set_t t = {NULL, 0, 0};
    bool ok = true;
    for (int i = 0; ok && i < count; i++)
        ok = set_add(&t, table[i][0], table[i][1]);
    if (ok && negated)
        ok = set_complement(&t);
    for (int i = 0; ok && i < t.count; i++)
        ok = set_add(s, t.ranges[i].lo, t.ranges[i].hi);
    free(t.ranges);
    return ok;
}

/* For fold run r: with `by_key` false adds key(c) to dst for every c of the run in src; with
 * `by_key` true adds c to dst for every c of the run whose key is in src. src is normalized. */
static bool fold_run(cp_set_t *dst, const cp_set_t *src, int r, bool by_key) {
    const int64_t first = brx_fold[r][0], last = brx_fold[r][1], delta = brx_fold[r][2],
                  stride = brx_fold[r][3];
    const int64_t shift = by_key ? delta : 0; /* the value looked up in src is c + shift */
    int lo = 0, hi = src->count - 1, start = src->count;
    while (lo <= hi) { /* the first range that ends at or after first + shift */
        int mid = lo + (hi - lo) / 2;
        if ((int64_t)src->ranges[mid].hi >= first + shift) {
            start = mid;
            hi = mid - 1;
        } else
            lo = mid + 1;
    }
    for (int i = start; i < src->count && (int64_t)src->ranges[i].lo <= last + shift; i++) {
        int64_t a =
            ((int64_t)src->ranges[i].lo > first + shift ? (int64_t)src->ranges[i].lo : first + shift) - shift;
        int64_t b =
            ((int64_t)src->ranges[i].hi < last + shift ? (int64_t)src->ranges[i].hi : last + shift) - shift;
        a = first + (a - first + stride - 1) / stride * stride;
        const int64_t add = by_key ? 0 : delta;
        if (a > b)
            continue;
        if (stride == 1) {
            if (!set_add(dst, (uint32_t)(a + add), (uint32_t)(b + add)))
                return false;
        } else {
            for (int64_t c = a; c <= b; c += stride) {
                if (!set_add(dst, (uint32_t)(c + add), (uint32_t)(c + add)))
                    return false;
            }
        }
    }
    return true;
}

/* Adds every character that folds together with a member (case-insensitive matching). */
static bool set_fold(cp_set_t *s) {
    set_normalize(s);
    const int runs = (int)(sizeof brx_fold / sizeof brx_fold[0]);
    cp_set_t keys = {NULL, 0, 0};
    bool ok = true;
    for (int i = 0; ok && i < s->count; i++)
        ok = set_add(&keys, s->ranges[i].lo, s->ranges[i].hi);
    for (int r = 0; ok && r < runs; r++)
        ok = fold_run(&keys, s, r, false);
    set_normalize(&keys); /* the members and their keys */
    for (int r = 0; ok && r < runs; r++)
        ok = fold_run(s, &keys, r, true);
    for (int i = 0; ok && i < keys.count; i++)
        ok = set_add(s, keys.ranges[i].lo, keys.ranges[i].hi);
    free(keys.ranges);
    set_normalize(s);
    return ok;
}

/* ---- parsing: pattern -> syntax tree ------------------------------------------------------- */

typedef enum { N_EMPTY, N_CHAR, N_SET, N_ANY, N_ASSERT, N_CAT, N_ALT, N_REPEAT } node_kind_t;
typedef enum { ANY_ALL, ANY_NOT_TERMINATOR, ANY_NOT_NEWLINE } any_mode_t;
typedef enum {
    A_START,
    A_END,
    A_END_BEFORE_TERMINATOR,
    A_LINE_START,
    A_LINE_END,
    A_WORD_BOUNDARY,
    A_NOT_WORD_BOUNDARY,
    A_NOT_BEFORE_LF
} assertion_t;

typedef struct {
    node_kind_t kind;
    int arg;         /* N_SET: set index; N_ANY: any_mode_t; N_ASSERT: assertion_t */
    bool unix_lines; /* N_ASSERT */
    uint32_t c;      /* N_CHAR */
    int first;       /* N_CAT, N_ALT: first child; N_REPEAT: the repeated node */
    int next;        /* the next sibling in a N_CAT or N_ALT, or -1 */
    int min, max;    /* N_REPEAT; max -1 = unbounded */
    bool fixed;      /* \A \z \Z \b \B \G: ICU refuses a quantifier on them */
} node_t;

enum { F_I = 1, F_M = 2, F_S = 4, F_X = 8, F_D = 16, F_W = 32 };
#define NOTHING (-2) /* parsed something that matches no text and takes no quantifier (flags, comments) */

typedef struct {
    const uint8_t *p, *end;
    node_t *nodes;
    int node_count, node_capacity;
    cp_set_t *sets;
    int set_count, set_capacity;
    unsigned flags;
    int depth;
    int groups;       /* capture groups */
    int backref;      /* the largest backreference number seen */
    brx_error_t kind; /* the first invalid error stops; the first unsupported one is kept */
    char *error;
    size_t error_size;
    bool stop;
    bool quoting;          /* inside \Q...\E */
    const uint8_t **names; /* capture group names, for duplicates */
    size_t *name_lengths;
    int name_count;
} parser_t;

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 3, 4)))
#endif
static int
fail(parser_t *ps, brx_error_t kind, const char *format, ...) {
    if (kind == BRX_INVALID || kind == BRX_NO_MEMORY)
        ps->stop = true;
    if (ps->kind == BRX_COMPILED || (ps->kind == BRX_UNSUPPORTED && kind != BRX_UNSUPPORTED)) {
        ps->kind = kind;
        if (ps->error && ps->error_size) {
            va_list arguments;
            va_start(arguments, format);
            vsnprintf(ps->error, ps->error_size, format, arguments);
            va_end(arguments);
        }
    }
    return -1;
}

static int node_new(parser_t *ps, node_kind_t kind) {
    if (ps->node_count == ps->node_capacity) {
        int grown = ps->node_capacity ? ps->node_capacity * 2 : 32;
        node_t *nodes = realloc(ps->nodes, (size_t)grown * sizeof *nodes);
        if (!nodes)
            return fail(ps, BRX_NO_MEMORY, "out of memory");
        ps->nodes = nodes;
        ps->node_capacity = grown;
    }
    node_t *n = &ps->nodes[ps->node_count];
    memset(n, 0, sizeof *n);
    n->kind = kind;
    n->first = -1;
    n->next = -1;
    return ps->node_count++;
}

/* A new empty set; its index, or -1. */
static int set_new(parser_t *ps) {
    if (ps->set_count == ps->set_capacity) {
        int grown = ps->set_capacity ? ps->set_capacity * 2 : 8;
        cp_set_t *sets = realloc(ps->sets, (size_t)grown * sizeof *sets);
        if (!sets)
            return fail(ps, BRX_NO_MEMORY, "out of memory");
        ps->sets = sets;
        ps->set_capacity = grown;
    }
    memset(&ps->sets[ps->set_count], 0, sizeof ps->sets[ps->set_count]);
    return ps->set_count++;
}

static int set_node(parser_t *ps, int set) {
    int n = node_new(ps, N_SET);
    if (n >= 0)
        ps->nodes[n].arg = set;
    return n;
}

static int assert_node(parser_t *ps, assertion_t assertion) {
    int n = node_new(ps, N_ASSERT);
    if (n >= 0) {
        ps->nodes[n].arg = (int)assertion;
        ps->nodes[n].unix_lines = (ps->flags & F_D) != 0;
    }
    return n;
}

static bool at_end(const parser_t *ps) {
    return ps->p >= ps->end;
}
static int peek(const parser_t *ps) {
    return at_end(ps) ? -1 : *ps->p;
}
static int peek_at(const parser_t *ps, size_t offset) {
    return ps->p + offset < ps->end ? ps->p[offset] : -1;
}

/* The next pattern character (the pattern is valid UTF-8). */
static uint32_t take(parser_t *ps) {
    size_t size;
    uint32_t c = decode(ps->p, (size_t)(ps->end - ps->p), 0, &size);
    ps->p += size;
    return c;
}

/* White space that the x flag ignores (ICU's Pattern_White_Space). */
static bool pattern_space(uint32_t c) {
    return c == ' ' || (c >= 0x09 && c <= 0x0D) || c == 0x85 || c == 0x200E || c == 0x200F || c == 0x2028 ||
           c == 0x2029;
}

/* With the x flag: skips white space and # comments (to the end of the line); true when it moved. */
static bool skip_free_space(parser_t *ps) {
    const uint8_t *start = ps->p;
    while ((ps->flags & F_X) && !at_end(ps)) {
        size_t size;
        uint32_t c = decode(ps->p, (size_t)(ps->end - ps->p), 0, &size);
        if (pattern_space(c)) {
            ps->p += size;
        } else if (c == '#') {
            while (!at_end(ps) && !line_terminator(take(ps), false)) {
            }
        } else {
            break;
        }
    }
    return ps->p != start;
}

/* Skips what is transparent between atoms, as ICU: \Q and \E (entering and leaving a quote),
 * (?#...) comments and, with the x flag, white space and # comments. */
static void skip_transparent(parser_t *ps) {
    while (!at_end(ps) && !ps->stop) {
        if (ps->quoting) {
            if (peek(ps) == '\\' && peek_at(ps, 1) == 'E') {
                ps->p += 2;
                ps->quoting = false;
                continue;
            }
            return;
        }
        if (peek(ps) == '\\' && peek_at(ps, 1) == 'Q') {
            ps->p += 2;
            ps->quoting = true;
            continue;
        }
        if (peek(ps) == '(' && peek_at(ps, 1) == '?' && peek_at(ps, 2) == '#') {
            while (!at_end(ps) && *ps->p != ')')
                ps->p++;
            if (at_end(ps)) {
                fail(ps, BRX_INVALID, "missing ) to close a (?# comment");
                return;
            }
            ps->p++;
            continue;
        }
        if (!skip_free_space(ps))
            return;
    }
}

static bool is_hex(int b) {
    return (b >= '0' && b <= '9') || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F');
}
static uint32_t hex_value(int b) {
    return b <= '9' ? (uint32_t)(b - '0') : (uint32_t)((b | 0x20) - 'a' + 10);
}

/* Exactly `digits` hex digits; false when they are not there. */
static bool read_hex(parser_t *ps, int digits, uint32_t *out) {
    uint32_t v = 0;
    for (int i = 0; i < digits; i++) {
        if (!is_hex(peek(ps)))
            return false;
        v = v * 16 + hex_value(*ps->p++);
    }
    *out = v;
    return true;
}

typedef enum { ESC_CHAR, ESC_SET, ESC_OTHER } escape_kind_t;

/* Adds \d \D \w \W \s \S \h \H \v \V (letter `e`) to the set; false when `e` is none of them. */
static bool class_escape(parser_t *ps, uint32_t e, cp_set_t *s) {
    static const uint32_t horizontal[][2] = {{0x09, 0x09},     {0x20, 0x20},     {0xA0, 0xA0},
                                             {0x1680, 0x1680}, {0x2000, 0x200A}, {0x202F, 0x202F},
                                             {0x205F, 0x205F}, {0x3000, 0x3000}};
    static const uint32_t vertical[][2] = {{0x0A, 0x0D}, {0x85, 0x85}, {0x2028, 0x2029}};
    bool ok;
    switch (e) {
    case 'd':
    case 'D':
        ok = set_add_table(s, brx_digit, (int)(sizeof brx_digit / sizeof brx_digit[0]), e == 'D');
        break;
    case 'w':
    case 'W':
        ok = set_add_table(s, brx_word, (int)(sizeof brx_word / sizeof brx_word[0]), e == 'W');
        break;
    case 's':
    case 'S':
        ok = set_add_table(s, brx_space, (int)(sizeof brx_space / sizeof brx_space[0]), e == 'S');
        break;
    case 'h':
    case 'H':
        ok = set_add_table(s, horizontal, (int)(sizeof horizontal / sizeof horizontal[0]), e == 'H');
        break;
    case 'v':
    case 'V':
        ok = set_add_table(s, vertical, (int)(sizeof vertical / sizeof vertical[0]), e == 'V');
        break;
    default:
        return false;
    }
    if (!ok)
        fail(ps, BRX_NO_MEMORY, "out of memory");
    return true;
}

/* Skips a {...} (\p{..}, \N{..}) or <...> (\k<..>) argument; false when it is missing or open. */
static bool skip_argument(parser_t *ps, int open, int close) {
    if (peek(ps) != open)
        return false;
    while (!at_end(ps) && *ps->p != close)
        ps->p++;
    if (at_end(ps))
        return false;
    ps->p++;
    return true;
}

/* Reads the escape after a backslash (already taken) that stands for one character, as ICU: the
 * character in *out and ESC_CHAR; ESC_OTHER when the escape is not a single character (the caller
 * handles it); -1 after an error. `in_class` changes \b (the letter b in a class). */
static int character_escape(parser_t *ps, uint32_t e, bool in_class, uint32_t *out) {
    uint32_t v = 0;
    switch (e) {
    case 't':
        *out = 0x09;
        return ESC_CHAR;
    case 'n':
        *out = 0x0A;
        return ESC_CHAR;
    case 'r':
        *out = 0x0D;
        return ESC_CHAR;
    case 'f':
        *out = 0x0C;
        return ESC_CHAR;
    case 'a':
        *out = 0x07;
        return ESC_CHAR;
    case 'e':
        *out = 0x1B;
        return ESC_CHAR;
    case 'c':
        if (at_end(ps)) {
            *out = 'c';
            return ESC_CHAR;
        }
        *out = take(ps) & 0x1Fu;
        return ESC_CHAR;
    case '0': {
        int digits = 0;
        while (digits < 3 && peek(ps) >= '0' && peek(ps) <= '7' &&
               v * 8 + (uint32_t)(peek(ps) - '0') <= 0xFF) {
            v = v * 8 + (uint32_t)(*ps->p++ - '0');
            digits++;
        }
        if (digits == 0)
            return fail(ps, BRX_INVALID, "\\0 needs an octal number (\\0ooo)");
        *out = v;
        return ESC_CHAR;
    }
    case 'x':
        if (peek(ps) == '{') {
            ps->p++;
            int digits = 0;
            while (is_hex(peek(ps)) && digits < 9) {
                v = v * 16 + hex_value(*ps->p++);
                digits++;
            }
            if (digits == 0 || digits > 8 || peek(ps) != '}' || v > 0x10FFFF)
                return fail(ps, BRX_INVALID, "a bad \\x{...} escape");
            ps->p++;
            *out = v;
            return ESC_CHAR;
        }
        if (!is_hex(peek(ps)))
            return fail(ps, BRX_INVALID, "\\x needs one or two hex digits, or {...}");
        v = hex_value(*ps->p++);
        if (is_hex(peek(ps)))
            v = v * 16 + hex_value(*ps->p++);
        *out = v;
        return ESC_CHAR;
    case 'u':
        if (!read_hex(ps, 4, &v))
            return fail(ps, BRX_INVALID, "\\u needs four hex digits");
        *out = v;
        return ESC_CHAR;
    case 'U':
        if (!read_hex(ps, 8, &v) || v > 0x10FFFF)
            return fail(ps, BRX_INVALID, "\\U needs eight hex digits of a code point");
        *out = v;
        return ESC_CHAR;
    case 'b':
        if (in_class) {
            *out = 'b';
            return ESC_CHAR;
        }
        return ESC_OTHER;
    case 'p':
    case 'P':
        if (!skip_argument(ps, '{', '}'))
            return fail(ps, BRX_INVALID, "\\%c needs a {property}", (int)e);
        fail(ps, BRX_UNSUPPORTED, "Unicode properties (\\%c{...}) are not supported", (int)e);
        return ESC_OTHER;
    case 'N':
        if (!skip_argument(ps, '{', '}'))
            return fail(ps, BRX_INVALID, "\\N needs a {name}");
        fail(ps, BRX_UNSUPPORTED, "character names (\\N{...}) are not supported");
        return ESC_OTHER;
    case 'd':
    case 'D':
    case 'w':
    case 'W':
    case 's':
    case 'S':
    case 'h':
    case 'H':
    case 'v':
    case 'V':
    case 'B':
    case 'A':
    case 'z':
    case 'Z':
    case 'G':
    case 'R':
    case 'X':
    case 'Q':
    case 'k':
    case '1':
    case '2':
    case '3':
    case '4':
    case '5':
    case '6':
    case '7':
    case '8':
    case '9':
        if (in_class && !(e == 'd' || e == 'D' || e == 'w' || e == 'W' || e == 's' || e == 'S' || e == 'h' ||
                          e == 'H' || e == 'v' || e == 'V' || e == 'Q' || e == 'R' || e == 'X' || e == 'k')) {
            *out = e; /* \B \A \z \Z \G and digits are not assertions inside a class */
            return ESC_CHAR;
        }
        return ESC_OTHER;
    default:
        *out = e; /* an escaped punctuation character or an unknown letter is the character itself */
        return ESC_CHAR;
    }
}

/* A node for the literal character c, with every case variant under the i flag. */
static int literal(parser_t *ps, uint32_t c) {
    if (ps->flags & F_I) {
        int set = set_new(ps);
        if (set < 0)
            return -1;
        if (!set_add(&ps->sets[set], c, c) || !set_fold(&ps->sets[set]))
            return fail(ps, BRX_NO_MEMORY, "out of memory");
        if (ps->sets[set].count > 1 || ps->sets[set].ranges[0].lo != ps->sets[set].ranges[0].hi)
            return set_node(ps, set);
        free(ps->sets[set].ranges);
        ps->set_count--;
    }
    int n = node_new(ps, N_CHAR);
    if (n >= 0)
        ps->nodes[n].c = c;
    return n;
}

/* Appends `child` to the children of `parent` (N_CAT or N_ALT), after `*last`. */
static void append_child(parser_t *ps, int parent, int *last, int child) {
    if (*last < 0)
        ps->nodes[parent].first = child;
    else
        ps->nodes[*last].next = child;
    *last = child;
}

static int parse_alt(parser_t *ps);

/* After '['. */
static int parse_class(parser_t *ps) {
    int set = set_new(ps);
    if (set < 0)
        return -1;
    bool negated = false, first = true;
    if (peek(ps) == '^') {
        negated = true;
        ps->p++;
    }
    for (;;) {
        skip_free_space(ps); /* in a class too */
        if (at_end(ps))
            return fail(ps, BRX_INVALID, "missing ] to close a class");
        int b = peek(ps);
        if (b == ']' && !first) {
            ps->p++;
            break;
        }
        first = false;
        if (b == '[') {
            /* [[a]b], [[:alpha:]]: skip the nested set, balanced. */
            int depth = 0;
            while (!at_end(ps)) {
                int d = *ps->p++;
                if (d == '\\' && !at_end(ps)) {
                    ps->p++;
                    continue;
                }
                if (d == '[')
                    depth++;
                if (d == ']' && --depth == 0)
                    break;
            }
            if (depth != 0)
                return fail(ps, BRX_INVALID, "missing ] to close a class");
            fail(ps, BRX_UNSUPPORTED, "nested classes and [:name:] sets are not supported");
            continue;
        }
        if ((b == '&' && peek_at(ps, 1) == '&') || (b == '-' && peek_at(ps, 1) == '-')) {
            ps->p += 2;
            fail(ps, BRX_UNSUPPORTED, "class intersection (&&) and difference (--) are not supported");
            continue;
        }
        uint32_t lo;
        if (b == '\\') {
            ps->p++;
            if (at_end(ps))
                return fail(ps, BRX_INVALID, "a trailing backslash");
            uint32_t e = take(ps);
            if (e == 'Q') { /* \Q...\E: each character literally */
                while (!at_end(ps) && !(peek(ps) == '\\' && peek_at(ps, 1) == 'E')) {
                    uint32_t q = take(ps);
                    if (!set_add(&ps->sets[set], q, q))
                        return fail(ps, BRX_NO_MEMORY, "out of memory");
                }
                if (!at_end(ps))
                    ps->p += 2;
                continue;
            }
            if (class_escape(ps, e, &ps->sets[set])) {
                if (ps->stop)
                    return -1;
                continue; /* a following '-' is a literal */
            }
            int kind = character_escape(ps, e, true, &lo);
            if (kind < 0)
                return -1;
            if (kind == ESC_OTHER) {
                if (!ps->stop)
                    fail(ps, BRX_UNSUPPORTED, "\\%c is not supported in a class", (int)e);
                if (ps->stop)
                    return -1;
                continue;
            }
        } else {
            lo = take(ps);
        }
        uint32_t hi = lo;
        if (peek(ps) == '-' && peek_at(ps, 1) != ']' && peek_at(ps, 1) != '-' && peek_at(ps, 1) != -1) {
            ps->p++;
            if (peek(ps) == '\\') {
                ps->p++;
                if (at_end(ps))
                    return fail(ps, BRX_INVALID, "a trailing backslash");
                uint32_t e = take(ps);
                cp_set_t scratch = {NULL, 0, 0};
                bool is_class = class_escape(ps, e, &scratch);
                free(scratch.ranges);
                if (is_class)
                    return fail(ps, BRX_INVALID, "a class range cannot end with \\%c", (int)e);
                int kind = character_escape(ps, e, true, &hi);
                if (kind < 0)
                    return -1;
                if (kind == ESC_OTHER)
                    return fail(ps, BRX_INVALID, "a bad end of a class range");
            } else {
                hi = take(ps);
            }
            if (hi < lo)
                return fail(ps, BRX_INVALID, "a class range goes backwards");
        }
        if (!set_add(&ps->sets[set], lo, hi))
            return fail(ps, BRX_NO_MEMORY, "out of memory");
    }
    cp_set_t *s = &ps->sets[set];
    if ((ps->flags & F_I) && !set_fold(s))
        return fail(ps, BRX_NO_MEMORY, "out of memory");
    set_normalize(s);
    if (negated && !set_complement(s))
        return fail(ps, BRX_NO_MEMORY, "out of memory");
    return set_node(ps, set);
}

/* After '('. */
static int parse_group(parser_t *ps) {
    if (++ps->depth > MAX_DEPTH) {
        fail(ps, BRX_UNSUPPORTED, "groups nested more than %d deep", MAX_DEPTH);
        ps->stop = true; /* too deep to go on safely */
        return -1;
    }
    unsigned saved = ps->flags;
    const char *unsupported = NULL;
    if (peek(ps) == '?') {
        ps->p++;
        int b = peek(ps);
        if (b == ':') {
            ps->p++;
        } else if (b == '#') {
            while (!at_end(ps) && *ps->p != ')')
                ps->p++;
            if (at_end(ps))
                return fail(ps, BRX_INVALID, "missing ) to close a (?# comment");
            ps->p++;
            ps->depth--;
            return NOTHING;
        } else if (b == '=' || b == '!') {
            ps->p++;
            unsupported = "lookahead (?= (?! is not supported";
        } else if (b == '>') {
            ps->p++;
            unsupported = "atomic groups (?> are not supported";
        } else if (b == '<' && (peek_at(ps, 1) == '=' || peek_at(ps, 1) == '!')) {
            ps->p += 2;
            unsupported = "lookbehind (?<= (?<! is not supported";
        } else if (b == '<') {
            ps->p++;
            int length = 0;
            while (!at_end(ps) && ((*ps->p >= 'a' && *ps->p <= 'z') || (*ps->p >= 'A' && *ps->p <= 'Z') ||
                                   (length > 0 && *ps->p >= '0' && *ps->p <= '9'))) {
                ps->p++;
                length++;
            }
            if (length == 0 || peek(ps) != '>')
                return fail(ps, BRX_INVALID, "a bad group name (?<name>: letters, then letters or digits");
            const uint8_t *name = ps->p - length;
            ps->p++;
            ps->groups++;
            for (int i = 0; i < ps->name_count; i++) {
                if (ps->name_lengths[i] == (size_t)length &&
                    memcmp(ps->names[i], name, (size_t)length) == 0) {
                    return fail(ps, BRX_INVALID, "the group name '%.*s' is used twice", length,
                                (const char *)name);
                }
            }
            const uint8_t **names = realloc(ps->names, (size_t)(ps->name_count + 1) * sizeof *names);
            if (names)
                ps->names = names;
            size_t *lengths =
                names ? realloc(ps->name_lengths, (size_t)(ps->name_count + 1) * sizeof *lengths) : NULL;
            if (lengths)
                ps->name_lengths = lengths;
            if (!names || !lengths)
                return fail(ps, BRX_NO_MEMORY, "out of memory");
            ps->names[ps->name_count] = name;
            ps->name_lengths[ps->name_count++] = (size_t)length;
        } else {
            /* Flags: (?imsx-imsx) for the rest of the group, or (?imsx-imsx: ...) for the group. */
            unsigned flags = ps->flags;
            bool off = false;
            int letters = 0;
            for (;;) {
                int f = peek(ps);
                unsigned bit = f == 'i'   ? F_I
                               : f == 'm' ? F_M
                               : f == 's' ? F_S
                               : f == 'x' ? F_X
                               : f == 'd' ? F_D
                               : f == 'w' ? F_W
                               : f == 'u' ? 0u
                                          : 0xFFu;
                if (f == '-' && !off) {
                    off = true;
                    ps->p++;
                    letters++;
                    continue;
                }
                if (bit == 0xFFu)
                    break;
                ps->p++;
                letters++;
                flags = off ? flags & ~bit : flags | bit;
            }
            if (letters == 0)
                return fail(ps, BRX_INVALID, "a bad (? group: expected flags (imsxdwu), :, #, =, !, <, or >");
            if (peek(ps) == ')') {
                ps->p++;
                ps->flags = flags; /* until the end of the enclosing group */
                ps->depth--;
                return NOTHING;
            }
            if (peek(ps) != ':')
                return fail(ps, BRX_INVALID, "a bad (? group: expected flags (imsxdwu), :, #, =, !, <, or >");
            ps->p++;
            ps->flags = flags;
        }
    } else {
        ps->groups++;
    }
    if (unsupported)
        fail(ps, BRX_UNSUPPORTED, "%s", unsupported);
    int inner = parse_alt(ps);
    ps->flags = saved;
    ps->depth--;
    if (inner == -1)
        return -1;
    if (peek(ps) != ')')
        return fail(ps, BRX_INVALID, "missing ) to close a group");
    ps->p++;
    if (inner == NOTHING)
        return node_new(ps, N_EMPTY);
    ps->nodes[inner].fixed = false; /* (\b)* is fine */
    return inner;
}

/* After a backslash outside a class. */
static int parse_escape(parser_t *ps) {
    if (at_end(ps))
        return fail(ps, BRX_INVALID, "a trailing backslash");
    uint32_t e = take(ps);
    int set;
    switch (e) {
    case 'd':
    case 'D':
    case 'w':
    case 'W':
    case 's':
    case 'S':
    case 'h':
    case 'H':
    case 'v':
    case 'V':
        set = set_new(ps);
        if (set < 0)
            return -1;
        class_escape(ps, e, &ps->sets[set]);
        if (ps->stop)
            return -1;
        set_normalize(&ps->sets[set]);
        return set_node(ps, set);
    case 'b':
    case 'B':
    case 'A':
    case 'G':
    case 'z':
    case 'Z': {
        if ((e == 'b' || e == 'B') && (ps->flags & F_W))
            fail(ps, BRX_UNSUPPORTED, "Unicode word boundaries (the w flag) are not supported");
        /* \G: where the search starts, which is the start here */
        int n = assert_node(ps, e == 'b'   ? A_WORD_BOUNDARY
                                : e == 'B' ? A_NOT_WORD_BOUNDARY
                                : e == 'z' ? A_END
                                : e == 'Z' ? A_END_BEFORE_TERMINATOR
                                           : A_START);
        if (n >= 0)
            ps->nodes[n].fixed = true;
        return n;
    }
    case 'R': { /* atomic, as ICU: \r\n | \r not before \n | [\n\x0B\f\x85\u2028\u2029] */
        int alt = node_new(ps, N_ALT), crlf = node_new(ps, N_CAT), cr_alone = node_new(ps, N_CAT);
        int cr = node_new(ps, N_CHAR), lf = node_new(ps, N_CHAR), cr2 = node_new(ps, N_CHAR),
            not_lf = assert_node(ps, A_NOT_BEFORE_LF);
        set = set_new(ps);
        if (alt < 0 || crlf < 0 || cr_alone < 0 || cr < 0 || lf < 0 || cr2 < 0 || not_lf < 0 || set < 0)
            return -1;
        if (!set_add(&ps->sets[set], 0x0A, 0x0C) || !set_add(&ps->sets[set], 0x85, 0x85) ||
            !set_add(&ps->sets[set], 0x2028, 0x2029)) {
            return fail(ps, BRX_NO_MEMORY, "out of memory");
        }
        int breaks = set_node(ps, set);
        if (breaks < 0)
            return -1;
        ps->nodes[cr].c = ps->nodes[cr2].c = 0x0D;
        ps->nodes[lf].c = 0x0A;
        int last = -1;
        append_child(ps, crlf, &last, cr);
        append_child(ps, crlf, &last, lf);
        last = -1;
        append_child(ps, cr_alone, &last, cr2);
        append_child(ps, cr_alone, &last, not_lf);
        last = -1;
        append_child(ps, alt, &last, crlf);
        append_child(ps, alt, &last, cr_alone);
        append_child(ps, alt, &last, breaks);
        return alt;
    }
    case 'X':
        fail(ps, BRX_UNSUPPORTED, "grapheme clusters (\\X) are not supported");
        return node_new(ps, N_EMPTY);
    case 'k':
        if (!skip_argument(ps, '<', '>'))
            return fail(ps, BRX_INVALID, "\\k needs a <name>");
        fail(ps, BRX_UNSUPPORTED, "backreferences (\\k<name>) are not supported");
        return node_new(ps, N_EMPTY);
    case 'Q': /* normally skipped as transparent */
        ps->quoting = true;
        return NOTHING;
    default:
        break;
    }
    if (e >= '1' && e <= '9') {
        int number = (int)(e - '0');
        while (peek(ps) >= '0' && peek(ps) <= '9' && number < 1000)
            number = number * 10 + (*ps->p++ - '0');
        if (number > ps->backref)
            ps->backref = number;
        return node_new(ps, N_EMPTY); /* decided at the end: unsupported, or invalid without such a group */
    }
    uint32_t c;
    int kind = character_escape(ps, e, false, &c);
    if (kind < 0)
        return -1;
    if (kind == ESC_OTHER)
        return ps->stop ? -1 : node_new(ps, N_EMPTY);
    return literal(ps, c);
}

static int parse_atom(parser_t *ps) {
    if (ps->quoting)
        return literal(ps, take(ps));
    int b = peek(ps);
    switch (b) {
    case '(':
        ps->p++;
        return parse_group(ps);
    case '[':
        ps->p++;
        return parse_class(ps);
    case '\\':
        ps->p++;
        return parse_escape(ps);
    case '.': {
        ps->p++;
        int n = node_new(ps, N_ANY);
        if (n >= 0)
            ps->nodes[n].arg = (ps->flags & F_S)   ? ANY_ALL
                               : (ps->flags & F_D) ? ANY_NOT_NEWLINE
                                                   : ANY_NOT_TERMINATOR;
        return n;
    }
    case '^':
        ps->p++;
        return assert_node(ps, (ps->flags & F_M) ? A_LINE_START : A_START);
    case '$':
        ps->p++;
        return assert_node(ps, (ps->flags & F_M) ? A_LINE_END : A_END_BEFORE_TERMINATOR);
    case '*':
    case '+':
    case '?':
    case '{':
        return fail(ps, BRX_INVALID, "a quantifier (%c) with nothing to repeat", b);
    case '}':
        return fail(ps, BRX_INVALID, "a } with no {");
    default:
        return literal(ps, take(ps));
    }
}

/* A count of {n,m}: false when there are no digits; an error when it does not fit. */
static bool parse_count(parser_t *ps, int64_t *out) {
    int64_t v = 0;
    const uint8_t *start = ps->p;
    while (peek(ps) >= '0' && peek(ps) <= '9') {
        v = v * 10 + (*ps->p++ - '0');
        if (v > INT32_MAX) {
            fail(ps, BRX_INVALID, "a repeat count too large");
            return false;
        }
    }
    *out = v;
    return ps->p > start;
}

static int parse_repeat(parser_t *ps) {
    int atom = parse_atom(ps);
    if (atom == -1)
        return -1;
    skip_transparent(ps);
    int b = peek(ps);
    if (atom == NOTHING) {
        if (b == '*' || b == '+' || b == '?' || b == '{')
            return fail(ps, BRX_INVALID, "a quantifier (%c) with nothing to repeat", b);
        return NOTHING;
    }
    if (!(b == '*' || b == '+' || b == '?' || b == '{'))
        return atom;
    if (ps->nodes[atom].fixed)
        return fail(ps, BRX_INVALID, "a quantifier (%c) on an anchor that takes none", b);
    ps->p++;
    int64_t min = 0, max = -1;
    if (b == '+')
        min = 1;
    else if (b == '?')
        max = 1;
    else if (b == '{') {
        skip_transparent(ps);
        if (!parse_count(ps, &min))
            return ps->stop ? -1 : fail(ps, BRX_INVALID, "a { that is not a count {n}, {n,} or {n,m}");
        max = min;
        skip_transparent(ps);
        if (peek(ps) == ',') {
            ps->p++;
            skip_transparent(ps);
            max = -1;
            if (peek(ps) != '}' && !parse_count(ps, &max))
                return ps->stop ? -1 : fail(ps, BRX_INVALID, "a bad {n,m} count");
            skip_transparent(ps);
        }
        if (peek(ps) != '}')
            return fail(ps, BRX_INVALID, "a { that is not a count {n}, {n,} or {n,m}");
        ps->p++;
        if (max != -1 && max < min)
            return fail(ps, BRX_INVALID, "a count {n,m} with m < n");
        if (min > MAX_COUNT || max > MAX_COUNT) {
            fail(ps, BRX_UNSUPPORTED, "repeat counts over %d are not supported", MAX_COUNT);
            min = max = 0;
        }
    }
    if (peek(ps) == '?') {
        ps->p++; /* lazy: the same answer for match or no match */
    } else if (peek(ps) == '+') {
        ps->p++;
        fail(ps, BRX_UNSUPPORTED, "possessive quantifiers (%c+) are not supported", b);
    }
    skip_transparent(ps);
    b = peek(ps);
    if (b == '*' || b == '+' || b == '?' || b == '{')
        return fail(ps, BRX_INVALID, "a quantifier (%c) after a quantifier", b);
    int r = node_new(ps, N_REPEAT);
    if (r < 0)
        return -1;
    ps->nodes[r].first = atom;
    ps->nodes[r].min = (int)min;
    ps->nodes[r].max = (int)max;
    return r;
}

static int parse_cat(parser_t *ps) {
    int cat = -1, only = -1, last = -1;
    for (;;) {
        skip_transparent(ps);
        if (ps->stop)
            return -1;
        if (at_end(ps) || (!ps->quoting && (peek(ps) == '|' || peek(ps) == ')')))
            break;
        int item = parse_repeat(ps);
        if (item == -1)
            return -1;
        if (ps->stop)
            return -1;
        if (item == NOTHING)
            continue;
        if (only < 0) {
            only = item;
            continue;
        }
        if (cat < 0) {
            cat = node_new(ps, N_CAT);
            if (cat < 0)
                return -1;
            append_child(ps, cat, &last, only);
        }
        append_child(ps, cat, &last, item);
    }
    if (cat >= 0)
        return cat;
    if (only >= 0)
        return only;
    return node_new(ps, N_EMPTY);
}

static int parse_alt(parser_t *ps) {
    int first = parse_cat(ps);
    if (first < 0 || peek(ps) != '|')
        return first;
    int alt = node_new(ps, N_ALT), last = -1;
    if (alt < 0)
        return -1;
    append_child(ps, alt, &last, first);
    while (peek(ps) == '|') {
        ps->p++;
        int next = parse_cat(ps);
        if (next < 0)
            return -1;
        append_child(ps, alt, &last, next);
    }
    return alt;
}

/* ---- code generation: syntax tree -> Pike VM program ---------------------------------------- */

enum { OP_CHAR, OP_SET, OP_ANY, OP_ASSERT, OP_SPLIT, OP_JMP, OP_MATCH };

typedef struct {
    uint8_t op;
    uint8_t mode;    /* OP_ANY: any_mode_t; OP_ASSERT: assertion_t */
    bool unix_lines; /* OP_ASSERT */
    int x, y;        /* OP_SPLIT, OP_JMP: targets; OP_SET: set index */
    uint32_t c;      /* OP_CHAR */
} instruction_t;

struct bounded_regex {
    instruction_t *code;
    int length;
    cp_set_t *sets;
    int set_count;
};

typedef struct {
    bounded_regex_t *re;
    const node_t *nodes;
    int capacity;
    size_t max_program;
    bool overflow;
} emitter_t;

static int emit(emitter_t *em, instruction_t in) {
    if (em->overflow)
        return -1;
    if ((size_t)em->re->length >= em->max_program) {
        em->overflow = true;
        return -1;
    }
    if (em->re->length == em->capacity) {
        int grown = em->capacity ? em->capacity * 2 : 64;
        instruction_t *code = realloc(em->re->code, (size_t)grown * sizeof *code);
        if (!code) {
            em->overflow = true;
            return -1;
        }
        em->re->code = code;
        em->capacity = grown;
    }
    em->re->code[em->re->length] = in;
    return em->re->length++;
}

/* Recursion depth: the nesting of groups and repeats (at most MAX_DEPTH + 1 levels of each). */
static void gen(emitter_t *em, int index) {
    if (em->overflow)
        return;
    const node_t *n = &em->nodes[index];
    instruction_t in;
    memset(&in, 0, sizeof in);
    switch (n->kind) {
    case N_EMPTY:
        return;
    case N_CHAR:
        in.op = OP_CHAR;
        in.c = n->c;
        emit(em, in);
        return;
    case N_SET:
        in.op = OP_SET;
        in.x = n->arg;
        emit(em, in);
        return;
    case N_ANY:
        in.op = OP_ANY;
        in.mode = (uint8_t)n->arg;
        emit(em, in);
        return;
    case N_ASSERT:
        in.op = OP_ASSERT;
        in.mode = (uint8_t)n->arg;
        in.unix_lines = n->unix_lines;
        emit(em, in);
        return;
    case N_CAT:
        for (int child = n->first; child >= 0 && !em->overflow; child = em->nodes[child].next)
            gen(em, child);
        return;
    case N_ALT: {
        /* split L1, next; L1: a; jmp end; next: split L2, next2; ... last alternative; end: */
        int jumps_first = -1; /* a chain of JMPs to patch, linked through .x */
        for (int child = n->first; child >= 0 && !em->overflow; child = em->nodes[child].next) {
            if (em->nodes[child].next < 0) {
                gen(em, child);
                break;
            }
            in.op = OP_SPLIT;
            int split = emit(em, in);
            gen(em, child);
            in.op = OP_JMP;
            in.x = jumps_first;
            int jump = emit(em, in);
            in.x = 0;
            if (em->overflow)
                return;
            em->re->code[split].x = split + 1;
            em->re->code[split].y = em->re->length;
            jumps_first = jump;
        }
        if (em->overflow)
            return;
        while (jumps_first >= 0) {
            int previous = em->re->code[jumps_first].x;
            em->re->code[jumps_first].x = em->re->length;
            jumps_first = previous;
        }
        return;
    }
    case N_REPEAT:
        for (int i = 0; i < n->min && !em->overflow; i++)
            gen(em, n->first);
        if (n->max == -1) {
            /* L: split body, out; body; jmp L */
            in.op = OP_SPLIT;
            int split = emit(em, in);
            gen(em, n->first);
            in.op = OP_JMP;
            in.x = split;
            emit(em, in);
            if (em->overflow)
                return;
            em->re->code[split].x = split + 1;
            em->re->code[split].y = em->re->length;
        } else {
            for (int i = n->min; i < n->max && !em->overflow; i++) {
                in.op = OP_SPLIT;
                int split = emit(em, in);
                gen(em, n->first);
                if (em->overflow)
                    return;
                em->re->code[split].x = split + 1;
                em->re->code[split].y = em->re->length;
            }
        }
        return;
    }
}

static bool valid_utf8(const uint8_t *text, size_t length) {
    for (size_t at = 0; at < length;) {
        size_t size;
        if (decode(text, length, at, &size) >= BAD_BYTE(0))
            return false;
        at += size;
    }
    return true;
}

bounded_regex_t *brx_compile(const char *pattern, size_t length, size_t max_program, brx_error_t *kind,
                             char *error, size_t error_size) {
    brx_error_t ignored;
    if (!kind)
        kind = &ignored;
    if (error && error_size)
        error[0] = '\0';
    parser_t ps;
    memset(&ps, 0, sizeof ps);
    ps.p = (const uint8_t *)pattern;
    ps.end = ps.p + length;
    ps.error = error;
    ps.error_size = error_size;
    int root = -1;
    if (length == 0) {
        fail(&ps, BRX_INVALID, "an empty pattern (the reference refuses it: it matches nothing)");
    } else if (length / 16 > max_program) {
        fail(&ps, BRX_UNSUPPORTED, "the pattern is too large for the bounded engine (%zu bytes)", length);
    } else if (!valid_utf8(ps.p, length)) {
        fail(&ps, BRX_INVALID, "the pattern is not valid UTF-8");
    } else {
        root = parse_alt(&ps);
        if (root >= 0 && !at_end(&ps))
            fail(&ps, BRX_INVALID, "an unmatched )");
        if (!ps.stop && ps.backref > 0) {
            if (ps.backref > ps.groups)
                fail(&ps, BRX_INVALID, "a backreference to group %d, which does not exist", ps.backref);
            else
                fail(&ps, BRX_UNSUPPORTED, "backreferences (\\%d) are not supported", ps.backref);
        }
        if (root < 0 && ps.kind == BRX_COMPILED)
            fail(&ps, BRX_NO_MEMORY, "out of memory");
    }
    bounded_regex_t *re = NULL;
    if (ps.kind == BRX_COMPILED) {
        re = calloc(1, sizeof *re);
        if (!re) {
            fail(&ps, BRX_NO_MEMORY, "out of memory");
        } else {
            emitter_t em = {re, ps.nodes, 0, max_program, false};
            gen(&em, root);
            instruction_t done;
            memset(&done, 0, sizeof done);
            done.op = OP_MATCH;
            emit(&em, done);
            if (em.overflow) {
                fail(&ps, BRX_UNSUPPORTED,
                     "the pattern is too large for the bounded engine (over %zu instructions)", max_program);
                brx_free(re);
                re = NULL;
            } else {
                re->sets = ps.sets; /* the program owns the sets now */
                re->set_count = ps.set_count;
                ps.sets = NULL;
                ps.set_count = 0;
            }
        }
    }
    for (int i = 0; i < ps.set_count; i++)
        free(ps.sets[i].ranges);
    free(ps.sets);
    free(ps.nodes);
    free(ps.names);
    free(ps.name_lengths);
    *kind = re ? BRX_COMPILED : ps.kind;
    return re;
}

void brx_free(bounded_regex_t *re) {
    if (!re)
        return;
    for (int i = 0; i < re->set_count; i++)
        free(re->sets[i].ranges);
    free(re->sets);
    free(re->code);
    free(re);
}

/* ---- matching: Pike VM over the text's characters ------------------------------------------- */

/* Where the VM stands: a position and the characters around it. */
typedef struct {
    const uint8_t *text;
    size_t length, at;
    uint32_t previous, current; /* NO_CHAR before the start / at the end */
    size_t current_size;
} position_t;

static bool assertion_holds(const bounded_regex_t *re, const instruction_t *in, const position_t *pos) {
    (void)re;
    bool unix_lines = in->unix_lines;
    bool at_start = pos->at == 0, at_end = pos->at >= pos->length;
    uint32_t previous = pos->previous, current = pos->current;
    switch ((assertion_t)in->mode) {
    case A_START:
        return at_start;
    case A_END:
        return at_end;
    case A_END_BEFORE_TERMINATOR: /* $ and \Z: the end, or before a line terminator (or \r\n) that ends the text */
        if (at_end)
            return true;
        if (line_terminator(current, unix_lines) && pos->at + pos->current_size == pos->length) {
            return unix_lines || !(current == 0x0A && previous == 0x0D);
        }
        if (!unix_lines && current == 0x0D && pos->at + 2 == pos->length && pos->text[pos->at + 1] == 0x0A)
            return true;
        return false;
    case A_LINE_START: /* (?m)^: the start, or after a line terminator that does not end the text */
        if (at_start)
            return true;
        if (at_end)
            return false;
        return line_terminator(previous, unix_lines) && !(!unix_lines && previous == 0x0D && current == 0x0A);
    case A_LINE_END: /* (?m)$: the end, or before a line terminator (not between \r and \n) */
        if (at_end)
            return true;
        return line_terminator(current, unix_lines) && !(!unix_lines && current == 0x0A && previous == 0x0D);
    case A_WORD_BOUNDARY:
        return is_word(previous) != is_word(current);
    case A_NOT_WORD_BOUNDARY:
        return is_word(previous) == is_word(current);
    case A_NOT_BEFORE_LF:
        return current != 0x0A;
    }
    return false;
}

typedef struct {
    int *pcs;
    int count;
} thread_list_t;

/* Adds pc and what it reaches without consuming a character; `mark` avoids duplicates per position.
 * Inlined into brx_search's two calls, the hot loop runs without a call per thread and character:
 * free natively, and about a fifth of the search's time when the operators run as WebAssembly,
 * where an interpreter pays for every call. */
static inline __attribute__((always_inline)) void add_thread(const bounded_regex_t *re, thread_list_t *list,
                                                             int *mark, int generation, int pc,
                                                             const position_t *pos, size_t *steps,
                                                             int *stack) {
    int top = 0;
    stack[top++] = pc;
    while (top > 0) {
        pc = stack[--top];
        if (mark[pc] == generation)
            continue;
        mark[pc] = generation;
        (*steps)++;
        const instruction_t *in = &re->code[pc];
        switch (in->op) {
        case OP_JMP:
            stack[top++] = in->x;
            break;
        case OP_SPLIT:
            stack[top++] = in->y;
            stack[top++] = in->x;
            break;
        case OP_ASSERT:
            if (assertion_holds(re, in, pos))
                stack[top++] = pc + 1;
            break;
        default:
            list->pcs[list->count++] = pc;
            break;
        }
    }
}

static bool consumes(const bounded_regex_t *re, const instruction_t *in, uint32_t c) {
    switch (in->op) {
    case OP_CHAR:
        return in->c == c;
    case OP_SET:
        return set_has(&re->sets[in->x], c);
    case OP_ANY:
        if (in->mode == ANY_ALL)
            return true;
        return !line_terminator(c, in->mode == ANY_NOT_NEWLINE);
    default:
        return false;
    }
}

brx_result_t brx_search(const bounded_regex_t *re, const char *text, size_t length, size_t step_budget) {
    int n = re->length;
    int *memory = malloc(sizeof(int) * ((size_t)n * 5 + 2));
    if (!memory)
        return BRX_BUDGET_EXCEEDED; /* no memory: refuse rather than guess */
    thread_list_t current = {memory, 0}, next = {memory + n, 0};
    int *mark = memory + 2 * n;
    int *stack = memory + 3 * n; /* 2n + 2: an unmarked pc is popped once and pushes at most two */
    for (int i = 0; i < n; i++)
        mark[i] = -1;
    const uint8_t *bytes = (const uint8_t *)text;
    position_t here = {bytes, length, 0, NO_CHAR, NO_CHAR, 0};
    if (length > 0)
        here.current = decode(bytes, length, 0, &here.current_size);
    size_t steps = 0;
    brx_result_t result = BRX_NO_MATCH;
    int generation = 0;
    for (;;) {
        /* Searching: a new thread may start at every position. */
        add_thread(re, &current, mark, generation, 0, &here, &steps, stack);
        generation++;
        next.count = 0;
        position_t after = here;
        if (here.at < length) {
            after.at = here.at + here.current_size;
            after.previous = here.current;
            after.current =
                after.at < length ? decode(bytes, length, after.at, &after.current_size) : NO_CHAR;
            if (after.at >= length)
                after.current_size = 0;
        }
        for (int i = 0; i < current.count; i++) {
            const instruction_t *in = &re->code[current.pcs[i]];
            steps++;
            if (in->op == OP_MATCH) {
                result = BRX_MATCH;
                goto done;
            }
            if (here.at >= length)
                continue;
            if (consumes(re, in, here.current))
                add_thread(re, &next, mark, generation, current.pcs[i] + 1, &after, &steps, stack);
        }
        if (steps > step_budget) {
            result = BRX_BUDGET_EXCEEDED;
            goto done;
        }
        if (here.at >= length)
            break;
        thread_list_t swap = current;
        current = next;
        next = swap;
        here = after;
    }
done:
    free(memory);
    return result;
}
