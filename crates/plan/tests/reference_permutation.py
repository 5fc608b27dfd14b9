# Independent reference implementation of the documented permutation algorithm
# (hashlib SHA-256 + a from-scratch ChaCha20 block function). `python3 reference_permutation.py`
# prints the values pinned in golden.rs; it shares no code with the Rust crate.
import hashlib, struct
def rotl(x,n): return ((x<<n)|(x>>(32-n)))&0xffffffff
def qr(s,a,b,c,d):
    s[a]=(s[a]+s[b])&0xffffffff; s[d]=rotl(s[d]^s[a],16)
    s[c]=(s[c]+s[d])&0xffffffff; s[b]=rotl(s[b]^s[c],12)
    s[a]=(s[a]+s[b])&0xffffffff; s[d]=rotl(s[d]^s[a],8)
    s[c]=(s[c]+s[d])&0xffffffff; s[b]=rotl(s[b]^s[c],7)
def block(key,counter):
    st=[0x61707865,0x3320646e,0x79622d32,0x6b206574]+list(struct.unpack('<8I',key))+[counter&0xffffffff,counter>>32,0,0]
    w=st[:]
    for _ in range(10):
        qr(w,0,4,8,12);qr(w,1,5,9,13);qr(w,2,6,10,14);qr(w,3,7,11,15)
        qr(w,0,5,10,15);qr(w,1,6,11,12);qr(w,2,7,8,13);qr(w,3,4,9,14)
    return [(a+b)&0xffffffff for a,b in zip(w,st)]
class R:
    def __init__(s,key): s.key=key; s.c=0; s.buf=[]
    def u32(s):
        if not s.buf: s.buf=block(s.key,s.c); s.c+=1
        return s.buf.pop(0)
    def u64(s):
        lo=s.u32(); hi=s.u32(); return lo|(hi<<32)
def perm(seed,qid,n,index):
    o=list(range(n))
    if index==0 or n<2: return o
    q=qid.encode()
    key=hashlib.sha256(b"ocrank-plan/permutation/v1\0"+struct.pack('<QQQ',seed,index,len(q))+q).digest()
    r=R(key)
    for i in range(n-1,0,-1):
        m=i+1; rej=(2**64)%m
        while True:
            x=r.u64()
            if x>=rej: break
        j=x%m; o[i],o[j]=o[j],o[i]
    return o
for c in [(0,"1037798",10,1),(0,"1037798",10,2),(42,"264014",20,1),(42,"264014",20,9),(12345,"q",5,3),(2**64-1,"Ünïcode qid",7,1000)]:
    print(c, perm(*c))
