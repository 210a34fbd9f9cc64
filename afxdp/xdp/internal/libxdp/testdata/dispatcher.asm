xdp_dispatcher:
	  0: MovReg dst: r6 src: r1
	  1: LoadMapValue dst: r8, fd: 0 off: 0 <xdp_disp_conf>
	  3: LdXMemB dst: r7 src: r8 off: 2 imm: 0
	  4: MovImm dst: r0 imm: 2
	  5: JLTImm dst: r7 off: -1 imm: 1 <xdp_dispatcher_out>
	  6: MovReg dst: r1 src: r6
	  7: Call -1 <prog0>
	  8: LdXMemW dst: r1 src: r8 off: 4 imm: 0
	  9: MovReg32 dst: r2 src: r0
	 10: RShReg dst: r1 src: r2
	 11: AndImm dst: r1 imm: 1
	 12: JEqImm dst: r1 off: -1 imm: 0 <xdp_dispatcher_out>
	 13: MovImm dst: r0 imm: 2
	 14: JLTImm dst: r7 off: -1 imm: 2 <xdp_dispatcher_out>
	 15: MovReg dst: r1 src: r6
	 16: Call -1 <prog1>
	 17: LdXMemW dst: r1 src: r8 off: 8 imm: 0
	 18: MovReg32 dst: r2 src: r0
	 19: RShReg dst: r1 src: r2
	 20: AndImm dst: r1 imm: 1
	 21: JEqImm dst: r1 off: -1 imm: 0 <xdp_dispatcher_out>
	 22: MovImm dst: r0 imm: 2
	 23: JLTImm dst: r7 off: -1 imm: 3 <xdp_dispatcher_out>
	 24: MovReg dst: r1 src: r6
	 25: Call -1 <prog2>
	 26: LdXMemW dst: r1 src: r8 off: 12 imm: 0
	 27: MovReg32 dst: r2 src: r0
	 28: RShReg dst: r1 src: r2
	 29: AndImm dst: r1 imm: 1
	 30: JEqImm dst: r1 off: -1 imm: 0 <xdp_dispatcher_out>
	 31: MovImm dst: r0 imm: 2
	 32: JLTImm dst: r7 off: -1 imm: 4 <xdp_dispatcher_out>
	 33: MovReg dst: r1 src: r6
	 34: Call -1 <prog3>
	 35: LdXMemW dst: r1 src: r8 off: 16 imm: 0
	 36: MovReg32 dst: r2 src: r0
	 37: RShReg dst: r1 src: r2
	 38: AndImm dst: r1 imm: 1
	 39: JEqImm dst: r1 off: -1 imm: 0 <xdp_dispatcher_out>
	 40: MovImm dst: r0 imm: 2
	 41: JLTImm dst: r7 off: -1 imm: 5 <xdp_dispatcher_out>
	 42: MovReg dst: r1 src: r6
	 43: Call -1 <prog4>
	 44: LdXMemW dst: r1 src: r8 off: 20 imm: 0
	 45: MovReg32 dst: r2 src: r0
	 46: RShReg dst: r1 src: r2
	 47: AndImm dst: r1 imm: 1
	 48: JEqImm dst: r1 off: -1 imm: 0 <xdp_dispatcher_out>
	 49: MovImm dst: r0 imm: 2
	 50: JLTImm dst: r7 off: -1 imm: 6 <xdp_dispatcher_out>
	 51: MovReg dst: r1 src: r6
	 52: Call -1 <prog5>
	 53: LdXMemW dst: r1 src: r8 off: 24 imm: 0
	 54: MovReg32 dst: r2 src: r0
	 55: RShReg dst: r1 src: r2
	 56: AndImm dst: r1 imm: 1
	 57: JEqImm dst: r1 off: -1 imm: 0 <xdp_dispatcher_out>
	 58: MovImm dst: r0 imm: 2
	 59: JLTImm dst: r7 off: -1 imm: 7 <xdp_dispatcher_out>
	 60: MovReg dst: r1 src: r6
	 61: Call -1 <prog6>
	 62: LdXMemW dst: r1 src: r8 off: 28 imm: 0
	 63: MovReg32 dst: r2 src: r0
	 64: RShReg dst: r1 src: r2
	 65: AndImm dst: r1 imm: 1
	 66: JEqImm dst: r1 off: -1 imm: 0 <xdp_dispatcher_out>
	 67: MovImm dst: r0 imm: 2
	 68: JLTImm dst: r7 off: -1 imm: 8 <xdp_dispatcher_out>
	 69: MovReg dst: r1 src: r6
	 70: Call -1 <prog7>
	 71: LdXMemW dst: r1 src: r8 off: 32 imm: 0
	 72: MovReg32 dst: r2 src: r0
	 73: RShReg dst: r1 src: r2
	 74: AndImm dst: r1 imm: 1
	 75: JEqImm dst: r1 off: -1 imm: 0 <xdp_dispatcher_out>
	 76: MovImm dst: r0 imm: 2
	 77: JLTImm dst: r7 off: -1 imm: 9 <xdp_dispatcher_out>
	 78: MovReg dst: r1 src: r6
	 79: Call -1 <prog8>
	 80: LdXMemW dst: r1 src: r8 off: 36 imm: 0
	 81: MovReg32 dst: r2 src: r0
	 82: RShReg dst: r1 src: r2
	 83: AndImm dst: r1 imm: 1
	 84: JEqImm dst: r1 off: -1 imm: 0 <xdp_dispatcher_out>
	 85: MovImm dst: r0 imm: 2
	 86: JLTImm dst: r7 off: -1 imm: 10 <xdp_dispatcher_out>
	 87: MovReg dst: r1 src: r6
	 88: Call -1 <prog9>
	 89: LdXMemW dst: r1 src: r8 off: 40 imm: 0
	 90: MovReg32 dst: r2 src: r0
	 91: RShReg dst: r1 src: r2
	 92: AndImm dst: r1 imm: 1
	 93: JEqImm dst: r1 off: -1 imm: 0 <xdp_dispatcher_out>
	 94: MovImm dst: r0 imm: 2
xdp_dispatcher_out:
	 95: Exit
prog0:
	 96: MovImm dst: r0 imm: 31
	 97: Exit
prog1:
	 98: MovImm dst: r0 imm: 31
	 99: Exit
prog2:
	100: MovImm dst: r0 imm: 31
	101: Exit
prog3:
	102: MovImm dst: r0 imm: 31
	103: Exit
prog4:
	104: MovImm dst: r0 imm: 31
	105: Exit
prog5:
	106: MovImm dst: r0 imm: 31
	107: Exit
prog6:
	108: MovImm dst: r0 imm: 31
	109: Exit
prog7:
	110: MovImm dst: r0 imm: 31
	111: Exit
prog8:
	112: MovImm dst: r0 imm: 31
	113: Exit
prog9:
	114: MovImm dst: r0 imm: 31
	115: Exit
