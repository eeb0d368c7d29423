#!/usr/bin/env python3
"""Capture server: a tiny fake Kafka broker (loopback only) that records the
raw request frames real clients send, for cpp/protocol/captured_test.cc.

usage: capture_server.py PORT OUT_DIR CLIENT_TAG

It answers just enough for a producer and a group consumer to run (ApiVersions
with the 3.9 maxima, Metadata, Produce, FindCoordinator, JoinGroup, SyncGroup,
Heartbeat, LeaveGroup, OffsetFetch, ListOffsets, Fetch, OffsetCommit,
InitProducerId), with responses encoded from the same JSON schemas by a small
generic encoder below. The first frame of each (api, version) is written to
OUT_DIR/<CLIENT_TAG>_<Api>_v<N>.hex (one line of hex, no size prefix).
Our own test tool; not part of the broker.
"""
import glob, json, os, re, socket, struct, sys, threading, time

SCHEMAS = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'schemas')
REQ, RESP = {}, {}
for f in glob.glob(SCHEMAS + '/*.json'):
    j = json.loads(re.sub(r'^\s*//.*$', '', open(f).read(), flags=re.M))
    if j['type'] == 'request':
        REQ[j['apiKey']] = j
    elif j['type'] == 'response':
        RESP[j['apiKey']] = j


def vr(s):
    if s is None or s == 'none':
        return None
    if s.endswith('+'):
        return int(s[:-1]), 1 << 15
    lo, _, hi = s.partition('-')
    return int(lo), int(hi or lo)


def inr(r, v):
    return r is not None and r[0] <= v <= r[1]


def flexible(j, v):
    return inr(vr(j['flexibleVersions']), v)


def uvarint(n):
    out = b''
    while n >= 0x80:
        out += bytes([(n & 0x7f) | 0x80]); n >>= 7
    return out + bytes([n])


class Buf:
    def __init__(self, b): self.b, self.p = b, 0
    def take(self, n): self.p += n; return self.b[self.p - n:self.p]
    def un(self, fmt): return struct.unpack('>' + fmt, self.take(struct.calcsize('>' + fmt)))[0]
    def uv(self):
        r = s = 0
        while True:
            c = self.take(1)[0]; r |= (c & 0x7f) << s; s += 7
            if not c & 0x80:
                return r


FIX = {'int8': 'b', 'int16': 'h', 'int32': 'i', 'int64': 'q', 'uint16': 'H', 'uint32': 'I',
       'float64': 'd', 'bool': '?'}


def struct_fields(j, f):
    if 'fields' in f:
        return f['fields']
    name = f['type'].lstrip('[]')
    return next(s['fields'] for s in j.get('commonStructs', []) if s['name'] == name)


def read_val(j, f, t, b, v, flex):
    if t in FIX:
        return b.un(FIX[t])
    if t == 'uuid':
        return b.take(16)
    if t in ('string', 'bytes', 'records'):
        n = (b.uv() - 1) if flex else b.un('h' if t == 'string' else 'i')
        if n < 0:
            return None
        return b.take(n).decode() if t == 'string' else b.take(n)
    if t.startswith('[]'):
        n = (b.uv() - 1) if flex else b.un('i')
        return None if n < 0 else [read_val(j, f, t[2:], b, v, flex) for _ in range(n)]
    return read_struct(j, struct_fields(j, f), b, v, flex)


def read_struct(j, fields, b, v, flex):
    out = {}
    for f in fields:
        if inr(vr(f['versions']), v) and 'tag' not in f:
            c = flex and f.get('flexibleVersions') != 'none'
            out[f['name']] = read_val(j, f, f['type'], b, v, c)
    if flex:
        for _ in range(b.uv()):
            b.uv(); b.take(b.uv())
    return out


def default(f):
    t, d = f['type'], f.get('default')
    if d == 'null':
        return None
    if t in FIX:
        return (str(d).lower() == 'true') if t == 'bool' else int(str(d or 0), 0)
    return {'string': d or '', 'bytes': b'', 'records': b'', 'uuid': bytes(16)}.get(t, [])


def write_val(j, f, t, val, v, flex):
    if t in FIX:
        return struct.pack('>' + FIX[t], val)
    if t == 'uuid':
        return val
    if t in ('string', 'bytes', 'records'):
        if isinstance(val, str):
            val = val.encode()
        if val is None:
            return b'\x00' if flex else struct.pack('>h' if t == 'string' else '>i', -1)
        pre = uvarint(len(val) + 1) if flex else struct.pack('>h' if t == 'string' else '>i', len(val))
        return pre + val
    if t.startswith('[]'):
        if val is None:
            return b'\x00' if flex else struct.pack('>i', -1)
        pre = uvarint(len(val) + 1) if flex else struct.pack('>i', len(val))
        return pre + b''.join(write_val(j, f, t[2:], e, v, flex) for e in val)
    return write_struct(j, struct_fields(j, f), val, v, flex)


def write_struct(j, fields, obj, v, flex):
    out = b''
    for f in fields:
        if inr(vr(f['versions']), v) and 'tag' not in f:
            val = obj.get(f['name'], default(f))
            out += write_val(j, f, f['type'], val, v, flex and f.get('flexibleVersions') != 'none')
    return out + (b'\x00' if flex else b'')  # never any tagged fields


def parse_request(frame):
    b = Buf(frame)
    key, ver, corr = b.un('h'), b.un('h'), b.un('i')
    b.take(max(b.un('h'), 0))  # client id (never compact)
    j = REQ[key]
    fl = flexible(j, ver)
    if fl:
        for _ in range(b.uv()):
            b.uv(); b.take(b.uv())
    return key, ver, corr, read_struct(j, j['fields'], b, ver, fl)


TOPIC_ID = bytes(range(1, 17))
LOG = {}  # topic -> list of record batches (bytes), base offsets rewritten
LOCK = threading.Lock()


def next_offset(topic):
    return sum(struct.unpack('>i', b[57:61])[0] for b in LOG.get(topic, []))


def answer(key, ver, req, port):
    node = {'NodeId': 0, 'Host': '127.0.0.1', 'Port': port}
    if key == 18:
        return {'ApiKeys': [{'ApiKey': k, 'MinVersion': 0, 'MaxVersion': vr(j['validVersions'])[1]}
                            for k, j in sorted(REQ.items())]}
    if key == 3:
        names = [t['Name'] for t in (req.get('Topics') or [])] or ['t1']
        parts = [{'PartitionIndex': 0, 'LeaderId': 0, 'LeaderEpoch': 0, 'ReplicaNodes': [0],
                  'IsrNodes': [0]}]
        return {'Brokers': [{**node, 'Rack': None}], 'ClusterId': 'capture', 'ControllerId': 0,
                'Topics': [{'Name': n, 'TopicId': TOPIC_ID, 'Partitions': parts} for n in names]}
    if key == 0:
        if req['Acks'] == 0:
            return None
        out = []
        for t in req['TopicData']:
            ps = []
            for p in t['PartitionData']:
                with LOCK:
                    base = next_offset(t['Name'])
                    recs = bytearray(p['Records'] or b'')
                    pos = 0
                    while pos + 61 <= len(recs):
                        n = struct.unpack('>i', recs[pos + 8:pos + 12])[0] + 12
                        batch = bytearray(recs[pos:pos + n])
                        batch[0:8] = struct.pack('>q', next_offset(t['Name']))
                        LOG.setdefault(t['Name'], []).append(bytes(batch))
                        pos += n
                ps.append({'Index': p['Index'], 'BaseOffset': base, 'LogAppendTimeMs': -1})
            out.append({'Name': t['Name'], 'PartitionResponses': ps})
        return {'Responses': out}
    if key == 10:
        keys = req.get('CoordinatorKeys') or [req.get('Key', '')]
        return {**node, 'Coordinators': [{'Key': k, **node} for k in keys]}
    if key == 11:
        proto = req['Protocols'][0]
        mid = 'member-1'
        return {'GenerationId': 1, 'ProtocolType': req.get('ProtocolType'), 'ProtocolName': proto['Name'],
                'Leader': mid, 'MemberId': mid,
                'Members': [{'MemberId': mid, 'GroupInstanceId': None, 'Metadata': proto['Metadata']}]}
    if key == 14:
        a = next((x['Assignment'] for x in req.get('Assignments') or []), b'')
        return {'ProtocolType': req.get('ProtocolType'), 'ProtocolName': req.get('ProtocolName'),
                'Assignment': a}
    if key == 13:
        return {'Members': [{'MemberId': m['MemberId'], 'GroupInstanceId': None}
                            for m in req.get('Members') or []]}
    if key == 9:
        def topics(ts):
            return [{'Name': t['Name'], 'Partitions': [{'PartitionIndex': i, 'CommittedOffset': -1}
                                                        for i in t['PartitionIndexes']]} for t in ts or []]
        if ver >= 8:
            return {'Groups': [{'GroupId': g['GroupId'], 'Topics': topics(g['Topics'])}
                               for g in req['Groups']]}
        return {'Topics': topics(req.get('Topics'))}
    if key == 2:
        return {'Topics': [{'Name': t['Name'], 'Partitions': [
            {'PartitionIndex': p['PartitionIndex'], 'Timestamp': -1,
             'Offset': 0 if p['Timestamp'] == -2 else next_offset(t['Name']),
             'OldStyleOffsets': [0]} for p in t['Partitions']]} for t in req['Topics']]}
    if key == 1:
        out = []
        for t in req['Topics']:
            name = t.get('Topic') or 't1'
            ps = []
            for p in t['Partitions']:
                with LOCK:
                    recs = b''.join(b for b in LOG.get(name, [])
                                    if struct.unpack('>q', b[:8])[0] + struct.unpack('>i', b[23:27])[0]
                                    >= p['FetchOffset'])
                    hw = next_offset(name)
                ps.append({'PartitionIndex': p['Partition'], 'HighWatermark': hw, 'LastStableOffset': hw,
                           'LogStartOffset': 0, 'AbortedTransactions': None, 'Records': recs})
            out.append({'Topic': name, 'TopicId': t.get('TopicId', bytes(16)), 'Partitions': ps})
        if not any(p['Records'] for o in out for p in o['Partitions']):
            time.sleep(0.2)
        return {'Responses': out}
    if key == 8:
        return {'Topics': [{'Name': t['Name'], 'Partitions': [
            {'PartitionIndex': p['PartitionIndex']} for p in t['Partitions']]} for t in req['Topics']]}
    if key == 22:
        return {'ProducerId': 1000, 'ProducerEpoch': 0}
    return {}  # Heartbeat and friends: all defaults (error code 0)


def recv_exact(s, n):
    b = b''
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            raise EOFError
        b += c
    return b


def serve(c, port, out_dir, tag):
    try:
        while True:
            frame = recv_exact(c, struct.unpack('>i', recv_exact(c, 4))[0])
            key, ver, corr, req = parse_request(frame)
            path = os.path.join(out_dir, f"{tag}_{REQ[key]['name'][:-7]}_v{ver}.hex")
            if not os.path.exists(path):
                with open(path, 'w') as fh:
                    fh.write(frame.hex() + '\n')
            body = answer(key, ver, req, port)
            if body is None:
                continue
            j = RESP[key]
            fl = flexible(j, ver)
            hdr = struct.pack('>i', corr) + (b'\x00' if fl and key != 18 else b'')
            msg = hdr + write_struct(j, j['fields'], body, ver, fl)
            c.sendall(struct.pack('>i', len(msg)) + msg)
    except (EOFError, OSError):
        pass
    finally:
        c.close()


def main():
    port, out_dir, tag = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(('127.0.0.1', port))
    srv.listen(16)
    while True:
        c, _ = srv.accept()
        threading.Thread(target=serve, args=(c, port, out_dir, tag), daemon=True).start()


if __name__ == '__main__':
    main()
