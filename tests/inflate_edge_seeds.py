#!/usr/bin/env python3
"""Two inflate seeds (stop 36): a fixed block, then a dynamic block whose
14-bit header ends on the input's last bit (HLIT 31: malformed); the
first two bytes are the output length (6: full, 100: not). Usage: OUTDIR"""
import os, sys

bits=[]
def lsb(v,n):
    for i in range(n): bits.append((v>>i)&1)
def huff(code,n):
    for i in range(n-1,-1,-1): bits.append((code>>i)&1)
lsb(0,1); lsb(1,2)            # block 1: not last, fixed
huff(0x30+65,8)               # 'A'
huff(1,7); huff(0,5)          # match: length 3, distance 1
huff(0x30+66,8)               # 'B'
huff(0x190,9)                 # 0x90
huff(0,7)                     # end of block
lsb(1,1); lsb(2,2)            # block 2: last, dynamic
lsb(31,5); lsb(0,5); lsb(0,4) # HLIT 31 (288 codes: malformed), HDIST, HCLEN
assert len(bits)==64
data=bytes(sum(bits[8*i+j]<<j for j in range(8)) for i in range(8))
for out_len,name in ((6,'inflate-dyn-header-at-input-end-out-full'),(100,'inflate-dyn-header-at-input-end')):
    open(os.path.join(sys.argv[1] if len(sys.argv) > 1 else ".", name),'wb').write(bytes([out_len,0])+data)
print(data.hex())
