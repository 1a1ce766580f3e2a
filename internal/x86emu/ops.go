package x86emu

import "fmt"

type opcode uint8

const (
	opInvalid opcode = iota
	// scalar
	opMOVQ
	opMOVL
	opADDQ
	opSUBQ
	opANDQ
	opORQ
	opXORQ
	opSHLQ
	opSHRQ
	opTESTQ
	opCMPQ
	opINCQ
	opDECQ
	opLEAQ
	opIMUL3Q
	opRET
	opPREFETCH
	// jumps
	opJMP
	opJEQ
	opJNE
	opJLT
	opJGE
	opJLE
	opJGT
	opJB
	opJAE
	// vector
	opVMOVUPS
	opMOVSS
	opVBROADCASTSS
	opVXORPS
	opVADDPS
	opVSUBPS
	opVMULPS
	opVFMADD231PS
	opVFMADD213PS
	opVHADDPS
	opVEXTRACTF128
	opVZEROUPPER
	opVPBROADCASTD
	opVPMOVZXWD
	opVPMOVZXDQ
	opVPCMPGTD
	opVMOVAPS
	opKMOVW
	opKSHIFTRW
	opVMOVSD
	opVMOVSS
	opVMULSS
	opVPXORD
	opVMAXPS
	opVCMPPS
	opIMULQ
	opMOVLQSX
	opVMOVD
	opVCVTSI2SSQ
	opVDIVSS
	// integer vectors, masks and the scalar ops of the rng kernels (int.go)
	opVMOVDQU
	opVMOVDQU16
	opVMOVDQU32
	opVMOVDQU64
	opVMOVDQA64
	opVPAND
	opVPOR
	opVPXOR
	opVPANDQ
	opVPORQ
	opVPXORQ
	opVPADDQ
	opVPSUBQ
	opVPMULUDQ
	opVPSRLQ
	opVPSLLQ
	opVPSLLVQ
	opVPSLLW
	opVPTESTMQ
	opVPCMPUQ
	opVPBROADCASTQ
	opVPMOVM2W
	opVMOVQ
	opKXORW
	opKORW
	opKMOVQ
	opKMOVD
	opKSHIFTRQ
	opMULQ
	opSHLL
	opSHRL
	opDECL
	opINCL
	// the sampler's relabelling (AVX-512F and CD)
	opVMOVDQA32
	opVPCMPUD
	opVPCMPEQD
	opVPADDD
	opVPSUBD
	opVPANDD
	opVPORD
	opVPSRLD
	opVPTESTNMD
	opVPCONFLICTD
	opVPLZCNTD
	opVPERMD
	opVPEXPANDD
	opVPCOMPRESSD
	opVPGATHERDD
	opVPSCATTERDD
	opKORTESTW
	opKXNORW
	opKANDNW
	opKNOTW
	opPOPCNTL
	// AVX2's Floyd masks
	opVPCMPEQQ
	opVPSRLVQ
	opVMOVMSKPD
)

var opcodes = map[string]opcode{
	"MOVQ": opMOVQ, "MOVL": opMOVL,
	"ADDQ": opADDQ, "SUBQ": opSUBQ, "ANDQ": opANDQ, "ORQ": opORQ, "XORQ": opXORQ,
	"SHLQ": opSHLQ, "SHRQ": opSHRQ, "TESTQ": opTESTQ, "CMPQ": opCMPQ,
	"INCQ": opINCQ, "DECQ": opDECQ, "LEAQ": opLEAQ, "IMUL3Q": opIMUL3Q, "RET": opRET,
	"PREFETCHT0": opPREFETCH, "PREFETCHT1": opPREFETCH, "PREFETCHT2": opPREFETCH, "PREFETCHNTA": opPREFETCH,
	"JMP": opJMP, "JEQ": opJEQ, "JZ": opJEQ, "JNE": opJNE, "JNZ": opJNE,
	"JLT": opJLT, "JGE": opJGE, "JLE": opJLE, "JGT": opJGT,
	"JB": opJB, "JCS": opJB, "JLO": opJB, "JAE": opJAE, "JCC": opJAE, "JHS": opJAE,
	"VMOVUPS": opVMOVUPS, "MOVSS": opMOVSS, "VBROADCASTSS": opVBROADCASTSS,
	"VXORPS": opVXORPS, "VADDPS": opVADDPS, "VSUBPS": opVSUBPS, "VMULPS": opVMULPS,
	"VFMADD231PS": opVFMADD231PS, "VFMADD213PS": opVFMADD213PS,
	"VHADDPS": opVHADDPS, "VEXTRACTF128": opVEXTRACTF128, "VZEROUPPER": opVZEROUPPER,
	"VPBROADCASTD": opVPBROADCASTD, "VPMOVZXWD": opVPMOVZXWD, "VPMOVZXDQ": opVPMOVZXDQ, "VPCMPGTD": opVPCMPGTD,
	"VMOVAPS": opVMOVAPS, "KMOVW": opKMOVW, "KSHIFTRW": opKSHIFTRW,
	"VMOVSD": opVMOVSD, "VMOVSS": opVMOVSS, "VMULSS": opVMULSS, "VPXORD": opVPXORD,
	"VMAXPS": opVMAXPS, "VCMPPS": opVCMPPS,
	"IMULQ": opIMULQ, "MOVLQSX": opMOVLQSX, "VMOVD": opVMOVD, "VCVTSI2SSQ": opVCVTSI2SSQ, "VDIVSS": opVDIVSS,
	"VMOVDQU": opVMOVDQU, "VMOVDQU16": opVMOVDQU16, "VMOVDQU32": opVMOVDQU32, "VMOVDQU64": opVMOVDQU64, "VMOVDQA64": opVMOVDQA64,
	"VPAND": opVPAND, "VPOR": opVPOR, "VPXOR": opVPXOR, "VPANDQ": opVPANDQ, "VPORQ": opVPORQ, "VPXORQ": opVPXORQ,
	"VPADDQ": opVPADDQ, "VPSUBQ": opVPSUBQ, "VPMULUDQ": opVPMULUDQ, "VPSRLQ": opVPSRLQ, "VPSLLQ": opVPSLLQ,
	"VPSLLVQ": opVPSLLVQ, "VPSLLW": opVPSLLW, "VPTESTMQ": opVPTESTMQ, "VPCMPUQ": opVPCMPUQ,
	"VPBROADCASTQ": opVPBROADCASTQ, "VPMOVM2W": opVPMOVM2W, "VMOVQ": opVMOVQ,
	"KXORW": opKXORW, "KORW": opKORW, "KMOVQ": opKMOVQ, "KMOVD": opKMOVD, "KSHIFTRQ": opKSHIFTRQ,
	"MULQ": opMULQ, "SHLL": opSHLL, "SHRL": opSHRL, "DECL": opDECL, "INCL": opINCL,
	"VMOVDQA32": opVMOVDQA32, "VPCMPUD": opVPCMPUD, "VPCMPEQD": opVPCMPEQD,
	"VPADDD": opVPADDD, "VPSUBD": opVPSUBD, "VPANDD": opVPANDD, "VPORD": opVPORD, "VPSRLD": opVPSRLD,
	"VPTESTNMD": opVPTESTNMD, "VPCONFLICTD": opVPCONFLICTD, "VPLZCNTD": opVPLZCNTD, "VPERMD": opVPERMD,
	"VPEXPANDD": opVPEXPANDD, "VPCOMPRESSD": opVPCOMPRESSD, "VPGATHERDD": opVPGATHERDD, "VPSCATTERDD": opVPSCATTERDD,
	"KORTESTW": opKORTESTW, "KXNORW": opKXNORW, "KANDNW": opKANDNW, "KNOTW": opKNOTW, "POPCNTL": opPOPCNTL,
	"VPCMPEQQ": opVPCMPEQQ, "VPSRLVQ": opVPSRLVQ, "VMOVMSKPD": opVMOVMSKPD,
}

// elemSize gives the element size in bytes, where it is not 4, of the
// instructions whose masks select elements (or that broadcast one).
var elemSize = map[opcode]int{
	opVMOVDQU16: 2, opVMOVDQU64: 8, opVMOVDQA64: 8, opVPANDQ: 8, opVPORQ: 8, opVPXORQ: 8,
	opVPADDQ: 8, opVPSUBQ: 8, opVPMULUDQ: 8, opVPSRLQ: 8, opVPSLLQ: 8, opVPSLLVQ: 8, opVPSLLW: 2,
	opVPTESTMQ: 8, opVPCMPUQ: 8, opVPBROADCASTQ: 8, opVPCMPEQQ: 8, opVPSRLVQ: 8,
}

// maskable are the instructions that may take a mask register before
// their destination ("OP src, K, dst"): the lanes it leaves out are not
// loaded or stored (so they cannot fault), and keep their value or, with
// .Z, are zeroed.
var maskable = map[opcode]bool{
	opVMOVUPS: true, opVMOVAPS: true, opVADDPS: true, opVMULPS: true, opVFMADD231PS: true, opVFMADD213PS: true,
	opVMOVDQU16: true, opVMOVDQU32: true, opVMOVDQU64: true, opVMOVDQA64: true,
	opVPANDQ: true, opVPORQ: true, opVPXORQ: true, opVPADDQ: true, opVPSUBQ: true, opVPSLLVQ: true,
	opVMOVDQA32: true, opVPADDD: true, opVPSUBD: true, opVPANDD: true, opVPORD: true, opVPERMD: true,
	opVPEXPANDD: true, opVPCOMPRESSD: true, opVPGATHERDD: true, opVPSCATTERDD: true,
}

func isJump(op opcode) bool { return op >= opJMP && op <= opJAE }

// operand form letters: i immediate, r general register, m memory, g
// memory with a vector of indices (gathers, scatters), k mask register,
// v vector register, x an X register, y a Y register, l label.
func (a operand) form() byte {
	switch a.kind {
	case opImm, opAddr:
		return 'i'
	case opMem:
		if a.mem.index.class == classZ {
			return 'g' // a gather's or scatter's vector of indices
		}
		return 'm'
	case opLabel:
		return 'l'
	case opReg:
		switch a.reg.class {
		case classGPR:
			return 'r'
		case classX:
			return 'x'
		case classY:
			return 'y'
		case classZ:
			return 'z'
		case classK:
			return 'k'
		}
	}
	return '?'
}

// forms lists the operand forms each opcode accepts; in a form, 'v'
// matches any vector register (x, y or z).
var forms = map[opcode][]string{
	opMOVQ: {"ir", "rr", "mr", "rm", "im"}, opMOVL: {"ir", "rr", "mr", "rm", "im"},
	opADDQ: {"ir", "rr", "mr", "im", "rm"}, opSUBQ: {"ir", "rr", "mr", "im", "rm"},
	opANDQ: {"ir", "rr", "mr"}, opORQ: {"ir", "rr", "mr"}, opXORQ: {"ir", "rr", "mr"},
	opSHLQ: {"ir", "rr"}, opSHRQ: {"ir", "rr"},
	opTESTQ: {"ir", "rr"}, opCMPQ: {"ri", "rr", "ir", "rm", "mr"},
	opINCQ: {"r", "m"}, opDECQ: {"r", "m"}, opLEAQ: {"mr"}, opIMUL3Q: {"irr"}, opRET: {""},
	opPREFETCH: {"m"},
	opVMOVUPS:  {"mv", "vm", "vv"}, opMOVSS: {"mx", "xm"},
	opVBROADCASTSS: {"mv", "xv"},
	opVXORPS:       {"vvv", "mvv"}, opVADDPS: {"vvv", "mvv"}, opVSUBPS: {"vvv", "mvv"}, opVMULPS: {"vvv", "mvv"},
	opVFMADD231PS: {"vvv", "mvv"}, opVFMADD213PS: {"vvv", "mvv"},
	opVHADDPS: {"vvv"}, opVEXTRACTF128: {"iyx"}, opVZEROUPPER: {""},
	opVPBROADCASTD: {"rv", "xv", "mv"}, opVPMOVZXWD: {"mv"}, opVPMOVZXDQ: {"yz", "xy"},
	opVPCMPGTD: {"vvk", "mvk", "vvv", "mvv"},
	opVMOVAPS:  {"vv", "mv", "vm"},
	opKMOVW:    {"mk", "km", "rk", "kr", "kk"}, opKSHIFTRW: {"ikk"},
	opVMOVSD: {"mx", "xm"}, opVMOVSS: {"mx", "xm"}, opVMULSS: {"xxx"},
	opVPXORD: {"vvv", "mvv"}, opVMAXPS: {"vvv", "mvv"},
	opVCMPPS: {"ivvk", "imvk", "ivvv", "imvv"},
	opIMULQ:  {"rr", "mr"}, opMOVLQSX: {"mr", "rr"},
	opVMOVD: {"rx", "xr"}, opVCVTSI2SSQ: {"rxx"}, opVDIVSS: {"xxx"},
	opVMOVDQU: {"mv", "vm", "vv"}, opVMOVDQU16: {"mv", "vm", "vv"}, opVMOVDQU32: {"mv", "vm", "vv"},
	opVMOVDQU64: {"mv", "vm", "vv"}, opVMOVDQA64: {"mv", "vm", "vv"},
	opVPAND: {"vvv", "mvv"}, opVPOR: {"vvv", "mvv"}, opVPXOR: {"vvv", "mvv"},
	opVPANDQ: {"vvv", "mvv"}, opVPORQ: {"vvv", "mvv"}, opVPXORQ: {"vvv", "mvv"},
	opVPADDQ: {"vvv", "mvv"}, opVPSUBQ: {"vvv", "mvv"}, opVPMULUDQ: {"vvv", "mvv"}, opVPSLLVQ: {"vvv", "mvv"},
	opVPSRLQ: {"ivv"}, opVPSLLQ: {"ivv"}, opVPSLLW: {"ivv"},
	opVPTESTMQ: {"vvk", "mvk"}, opVPCMPUQ: {"ivvk", "imvk"},
	opVPBROADCASTQ: {"rv", "xv", "mv"}, opVPMOVM2W: {"kv"}, opVMOVQ: {"rx", "xr"},
	opKXORW: {"kkk"}, opKORW: {"kkk"}, opKMOVQ: {"rk", "kr", "kk"}, opKMOVD: {"rk", "kr", "kk"}, opKSHIFTRQ: {"ikk"},
	opMULQ: {"r", "m"}, opSHLL: {"ir", "rr"}, opSHRL: {"ir", "rr"}, opDECL: {"r"}, opINCL: {"r"},
	opVMOVDQA32: {"mv", "vm", "vv"}, opVPCMPUD: {"ivvk", "imvk"}, opVPCMPEQD: {"vvk", "mvk", "vvv", "mvv"},
	opVPADDD: {"vvv", "mvv"}, opVPSUBD: {"vvv", "mvv"}, opVPANDD: {"vvv", "mvv"}, opVPORD: {"vvv", "mvv"},
	opVPSRLD: {"ivv"}, opVPTESTNMD: {"vvk"}, opVPCONFLICTD: {"zz"}, opVPLZCNTD: {"zz"}, opVPERMD: {"vvv"},
	opVPEXPANDD: {"zz"}, opVPCOMPRESSD: {"zz"}, opVPGATHERDD: {"gz"}, opVPSCATTERDD: {"zg"},
	opKORTESTW: {"kk"}, opKXNORW: {"kkk"}, opKANDNW: {"kkk"}, opKNOTW: {"kk"}, opPOPCNTL: {"rr"},
	opVPCMPEQQ: {"vvk", "mvk", "vvv", "mvv"}, opVPSRLVQ: {"vvv", "mvv"}, opVMOVMSKPD: {"vr"},
}

func checkForm(in *inst) error {
	got := make([]byte, len(in.args))
	for i, a := range in.args {
		got[i] = a.form()
	}
	if isJump(in.op) {
		if string(got) != "l" {
			return fmt.Errorf("a jump takes one label")
		}
		return nil
	}
	switch {
	case in.bcst && in.op != opVFMADD231PS && in.op != opVFMADD213PS && in.op != opVMULPS && in.op != opVADDPS:
		return fmt.Errorf(".BCST not supported on this instruction")
	case in.zero && !in.masked:
		return fmt.Errorf(".Z needs a mask register")
	case in.masked && got[len(got)-1] == 'm' && in.zero:
		return fmt.Errorf(".Z on a store")
	}
	for _, f := range forms[in.op] {
		if len(f) != len(got) {
			continue
		}
		ok := true
		for i := range f {
			g := got[i]
			if f[i] == 'v' && (g == 'x' || g == 'y' || g == 'z') || f[i] == g {
				continue
			}
			ok = false
		}
		if ok {
			if in.bcst && got[0] != 'm' {
				return fmt.Errorf(".BCST needs a memory source")
			}
			if in.op == opVCMPPS && in.args[0].imm&^31 != 0 || (in.op == opVPCMPUQ || in.op == opVPCMPUD) && in.args[0].imm&^7 != 0 {
				return fmt.Errorf("comparison predicate %d", in.args[0].imm)
			}
			if (in.op == opSHLQ || in.op == opSHRQ || in.op == opSHLL || in.op == opSHRL) && got[0] == 'r' && in.args[0].reg.n != 1 {
				return fmt.Errorf("a shift count register other than CX")
			}
			return checkWidths(in)
		}
	}
	return fmt.Errorf("operands %q not supported", got)
}

// checkWidths rejects mixed vector widths where the instruction needs one.
func checkWidths(in *inst) error {
	switch in.op {
	case opVXORPS, opVPXORD, opVADDPS, opVSUBPS, opVMULPS, opVMAXPS, opVFMADD231PS, opVFMADD213PS, opVHADDPS, opVPCMPGTD, opVCMPPS, opVMOVAPS,
		opVPAND, opVPOR, opVPXOR, opVPANDQ, opVPORQ, opVPXORQ, opVPADDQ, opVPSUBQ, opVPMULUDQ, opVPSLLVQ,
		opVPSRLQ, opVPSLLQ, opVPSLLW, opVPTESTMQ, opVPCMPUQ, opVMOVDQU, opVMOVDQU16, opVMOVDQU32, opVMOVDQU64, opVMOVDQA64,
		opVMOVDQA32, opVPCMPUD, opVPCMPEQD, opVPCMPEQQ, opVPSRLVQ, opVPADDD, opVPSUBD, opVPANDD, opVPORD, opVPSRLD, opVPTESTNMD, opVPERMD:
		w := 0
		for _, a := range in.args {
			if x := a.reg.width(); a.kind == opReg && x > 0 {
				if w != 0 && x != w {
					return fmt.Errorf("mixed vector widths")
				}
				w = x
			}
		}
		if in.op == opVHADDPS && w == 16 {
			return fmt.Errorf("VHADDPS has no 512-bit form")
		}
	case opVMOVUPS:
		if in.args[0].kind == opReg && in.args[1].kind == opReg && in.args[0].reg.width() != in.args[1].reg.width() {
			return fmt.Errorf("mixed vector widths")
		}
	case opVPMOVZXWD:
		if in.args[1].reg.width() == 4 {
			return fmt.Errorf("VPMOVZXWD to an X register not supported")
		}
	}
	return nil
}
