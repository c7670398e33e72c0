#include "wrapper.h"

// Static wrappers

uint32_t fi_tc_dscp_set_onesided_shim(uint8_t dscp) { return fi_tc_dscp_set(dscp); }
uint8_t fi_tc_dscp_get_onesided_shim(uint32_t tclass) { return fi_tc_dscp_get(tclass); }
struct fi_info * fi_allocinfo_onesided_shim(void) { return fi_allocinfo(); }
int fi_close_onesided_shim(struct fid *fid) { return fi_close(fid); }
int fi_control_onesided_shim(struct fid *fid, int command, void *arg) { return fi_control(fid, command, arg); }
int fi_alias_onesided_shim(struct fid *fid, struct fid **alias_fid, uint64_t flags) { return fi_alias(fid, alias_fid, flags); }
int fi_get_val_onesided_shim(struct fid *fid, int name, void *val) { return fi_get_val(fid, name, val); }
int fi_set_val_onesided_shim(struct fid *fid, int name, void *val) { return fi_set_val(fid, name, val); }
int fi_open_ops_onesided_shim(struct fid *fid, const char *name, uint64_t flags, void **ops, void *context) { return fi_open_ops(fid, name, flags, ops, context); }
int fi_set_ops_onesided_shim(struct fid *fid, const char *name, uint64_t flags, void *ops, void *context) { return fi_set_ops(fid, name, flags, ops, context); }
int fi_trywait_onesided_shim(struct fid_fabric *fabric, struct fid **fids, int count) { return fi_trywait(fabric, fids, count); }
int fi_wait_onesided_shim(struct fid_wait *waitset, int timeout) { return fi_wait(waitset, timeout); }
int fi_poll_onesided_shim(struct fid_poll *pollset, void **context, int count) { return fi_poll(pollset, context, count); }
int fi_poll_add_onesided_shim(struct fid_poll *pollset, struct fid *event_fid, uint64_t flags) { return fi_poll_add(pollset, event_fid, flags); }
int fi_poll_del_onesided_shim(struct fid_poll *pollset, struct fid *event_fid, uint64_t flags) { return fi_poll_del(pollset, event_fid, flags); }
int fi_eq_open_onesided_shim(struct fid_fabric *fabric, struct fi_eq_attr *attr, struct fid_eq **eq, void *context) { return fi_eq_open(fabric, attr, eq, context); }
ssize_t fi_eq_read_onesided_shim(struct fid_eq *eq, uint32_t *event, void *buf, size_t len, uint64_t flags) { return fi_eq_read(eq, event, buf, len, flags); }
ssize_t fi_eq_readerr_onesided_shim(struct fid_eq *eq, struct fi_eq_err_entry *buf, uint64_t flags) { return fi_eq_readerr(eq, buf, flags); }
ssize_t fi_eq_write_onesided_shim(struct fid_eq *eq, uint32_t event, const void *buf, size_t len, uint64_t flags) { return fi_eq_write(eq, event, buf, len, flags); }
ssize_t fi_eq_sread_onesided_shim(struct fid_eq *eq, uint32_t *event, void *buf, size_t len, int timeout, uint64_t flags) { return fi_eq_sread(eq, event, buf, len, timeout, flags); }
const char * fi_eq_strerror_onesided_shim(struct fid_eq *eq, int prov_errno, const void *err_data, char *buf, size_t len) { return fi_eq_strerror(eq, prov_errno, err_data, buf, len); }
ssize_t fi_cq_read_onesided_shim(struct fid_cq *cq, void *buf, size_t count) { return fi_cq_read(cq, buf, count); }
ssize_t fi_cq_readfrom_onesided_shim(struct fid_cq *cq, void *buf, size_t count, fi_addr_t *src_addr) { return fi_cq_readfrom(cq, buf, count, src_addr); }
ssize_t fi_cq_readerr_onesided_shim(struct fid_cq *cq, struct fi_cq_err_entry *buf, uint64_t flags) { return fi_cq_readerr(cq, buf, flags); }
ssize_t fi_cq_sread_onesided_shim(struct fid_cq *cq, void *buf, size_t count, const void *cond, int timeout) { return fi_cq_sread(cq, buf, count, cond, timeout); }
ssize_t fi_cq_sreadfrom_onesided_shim(struct fid_cq *cq, void *buf, size_t count, fi_addr_t *src_addr, const void *cond, int timeout) { return fi_cq_sreadfrom(cq, buf, count, src_addr, cond, timeout); }
int fi_cq_signal_onesided_shim(struct fid_cq *cq) { return fi_cq_signal(cq); }
const char * fi_cq_strerror_onesided_shim(struct fid_cq *cq, int prov_errno, const void *err_data, char *buf, size_t len) { return fi_cq_strerror(cq, prov_errno, err_data, buf, len); }
uint64_t fi_cntr_read_onesided_shim(struct fid_cntr *cntr) { return fi_cntr_read(cntr); }
uint64_t fi_cntr_readerr_onesided_shim(struct fid_cntr *cntr) { return fi_cntr_readerr(cntr); }
int fi_cntr_add_onesided_shim(struct fid_cntr *cntr, uint64_t value) { return fi_cntr_add(cntr, value); }
int fi_cntr_adderr_onesided_shim(struct fid_cntr *cntr, uint64_t value) { return fi_cntr_adderr(cntr, value); }
int fi_cntr_set_onesided_shim(struct fid_cntr *cntr, uint64_t value) { return fi_cntr_set(cntr, value); }
int fi_cntr_seterr_onesided_shim(struct fid_cntr *cntr, uint64_t value) { return fi_cntr_seterr(cntr, value); }
int fi_cntr_wait_onesided_shim(struct fid_cntr *cntr, uint64_t threshold, int timeout) { return fi_cntr_wait(cntr, threshold, timeout); }
int fi_domain_onesided_shim(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **domain, void *context) { return fi_domain(fabric, info, domain, context); }
int fi_domain2_onesided_shim(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **domain, uint64_t flags, void *context) { return fi_domain2(fabric, info, domain, flags, context); }
int fi_domain_bind_onesided_shim(struct fid_domain *domain, struct fid *fid, uint64_t flags) { return fi_domain_bind(domain, fid, flags); }
int fi_cq_open_onesided_shim(struct fid_domain *domain, struct fi_cq_attr *attr, struct fid_cq **cq, void *context) { return fi_cq_open(domain, attr, cq, context); }
int fi_cntr_open_onesided_shim(struct fid_domain *domain, struct fi_cntr_attr *attr, struct fid_cntr **cntr, void *context) { return fi_cntr_open(domain, attr, cntr, context); }
int fi_wait_open_onesided_shim(struct fid_fabric *fabric, struct fi_wait_attr *attr, struct fid_wait **waitset) { return fi_wait_open(fabric, attr, waitset); }
int fi_poll_open_onesided_shim(struct fid_domain *domain, struct fi_poll_attr *attr, struct fid_poll **pollset) { return fi_poll_open(domain, attr, pollset); }
int fi_mr_reg_onesided_shim(struct fid_domain *domain, const void *buf, size_t len, uint64_t acs, uint64_t offset, uint64_t requested_key, uint64_t flags, struct fid_mr **mr, void *context) { return fi_mr_reg(domain, buf, len, acs, offset, requested_key, flags, mr, context); }
int fi_mr_regv_onesided_shim(struct fid_domain *domain, const struct iovec *iov, size_t count, uint64_t acs, uint64_t offset, uint64_t requested_key, uint64_t flags, struct fid_mr **mr, void *context) { return fi_mr_regv(domain, iov, count, acs, offset, requested_key, flags, mr, context); }
int fi_mr_regattr_onesided_shim(struct fid_domain *domain, const struct fi_mr_attr *attr, uint64_t flags, struct fid_mr **mr) { return fi_mr_regattr(domain, attr, flags, mr); }
void * fi_mr_desc_onesided_shim(struct fid_mr *mr) { return fi_mr_desc(mr); }
uint64_t fi_mr_key_onesided_shim(struct fid_mr *mr) { return fi_mr_key(mr); }
int fi_mr_raw_attr_onesided_shim(struct fid_mr *mr, uint64_t *base_addr, uint8_t *raw_key, size_t *key_size, uint64_t flags) { return fi_mr_raw_attr(mr, base_addr, raw_key, key_size, flags); }
int fi_mr_map_raw_onesided_shim(struct fid_domain *domain, uint64_t base_addr, uint8_t *raw_key, size_t key_size, uint64_t *key, uint64_t flags) { return fi_mr_map_raw(domain, base_addr, raw_key, key_size, key, flags); }
int fi_mr_unmap_key_onesided_shim(struct fid_domain *domain, uint64_t key) { return fi_mr_unmap_key(domain, key); }
int fi_mr_bind_onesided_shim(struct fid_mr *mr, struct fid *bfid, uint64_t flags) { return fi_mr_bind(mr, bfid, flags); }
int fi_mr_refresh_onesided_shim(struct fid_mr *mr, const struct iovec *iov, size_t count, uint64_t flags) { return fi_mr_refresh(mr, iov, count, flags); }
int fi_mr_enable_onesided_shim(struct fid_mr *mr) { return fi_mr_enable(mr); }
int fi_av_open_onesided_shim(struct fid_domain *domain, struct fi_av_attr *attr, struct fid_av **av, void *context) { return fi_av_open(domain, attr, av, context); }
int fi_av_bind_onesided_shim(struct fid_av *av, struct fid *fid, uint64_t flags) { return fi_av_bind(av, fid, flags); }
int fi_av_insert_onesided_shim(struct fid_av *av, const void *addr, size_t count, fi_addr_t *fi_addr, uint64_t flags, void *context) { return fi_av_insert(av, addr, count, fi_addr, flags, context); }
int fi_av_insertsvc_onesided_shim(struct fid_av *av, const char *node, const char *service, fi_addr_t *fi_addr, uint64_t flags, void *context) { return fi_av_insertsvc(av, node, service, fi_addr, flags, context); }
int fi_av_insertsym_onesided_shim(struct fid_av *av, const char *node, size_t nodecnt, const char *service, size_t svccnt, fi_addr_t *fi_addr, uint64_t flags, void *context) { return fi_av_insertsym(av, node, nodecnt, service, svccnt, fi_addr, flags, context); }
int fi_av_remove_onesided_shim(struct fid_av *av, fi_addr_t *fi_addr, size_t count, uint64_t flags) { return fi_av_remove(av, fi_addr, count, flags); }
int fi_av_lookup_onesided_shim(struct fid_av *av, fi_addr_t fi_addr, void *addr, size_t *addrlen) { return fi_av_lookup(av, fi_addr, addr, addrlen); }
const char * fi_av_straddr_onesided_shim(struct fid_av *av, const void *addr, char *buf, size_t *len) { return fi_av_straddr(av, addr, buf, len); }
fi_addr_t fi_rx_addr_onesided_shim(fi_addr_t fi_addr, int rx_index, int rx_ctx_bits) { return fi_rx_addr(fi_addr, rx_index, rx_ctx_bits); }
int fi_passive_ep_onesided_shim(struct fid_fabric *fabric, struct fi_info *info, struct fid_pep **pep, void *context) { return fi_passive_ep(fabric, info, pep, context); }
int fi_endpoint_onesided_shim(struct fid_domain *domain, struct fi_info *info, struct fid_ep **ep, void *context) { return fi_endpoint(domain, info, ep, context); }
int fi_endpoint2_onesided_shim(struct fid_domain *domain, struct fi_info *info, struct fid_ep **ep, uint64_t flags, void *context) { return fi_endpoint2(domain, info, ep, flags, context); }
int fi_scalable_ep_onesided_shim(struct fid_domain *domain, struct fi_info *info, struct fid_ep **sep, void *context) { return fi_scalable_ep(domain, info, sep, context); }
int fi_ep_bind_onesided_shim(struct fid_ep *ep, struct fid *bfid, uint64_t flags) { return fi_ep_bind(ep, bfid, flags); }
int fi_pep_bind_onesided_shim(struct fid_pep *pep, struct fid *bfid, uint64_t flags) { return fi_pep_bind(pep, bfid, flags); }
int fi_scalable_ep_bind_onesided_shim(struct fid_ep *sep, struct fid *bfid, uint64_t flags) { return fi_scalable_ep_bind(sep, bfid, flags); }
int fi_enable_onesided_shim(struct fid_ep *ep) { return fi_enable(ep); }
ssize_t fi_cancel_onesided_shim(fid_t fid, void *context) { return fi_cancel(fid, context); }
int fi_setopt_onesided_shim(fid_t fid, int level, int optname, const void *optval, size_t optlen) { return fi_setopt(fid, level, optname, optval, optlen); }
int fi_getopt_onesided_shim(fid_t fid, int level, int optname, void *optval, size_t *optlen) { return fi_getopt(fid, level, optname, optval, optlen); }
int fi_ep_alias_onesided_shim(struct fid_ep *ep, struct fid_ep **alias_ep, uint64_t flags) { return fi_ep_alias(ep, alias_ep, flags); }
int fi_tx_context_onesided_shim(struct fid_ep *ep, int idx, struct fi_tx_attr *attr, struct fid_ep **tx_ep, void *context) { return fi_tx_context(ep, idx, attr, tx_ep, context); }
int fi_rx_context_onesided_shim(struct fid_ep *ep, int idx, struct fi_rx_attr *attr, struct fid_ep **rx_ep, void *context) { return fi_rx_context(ep, idx, attr, rx_ep, context); }
int fi_stx_context_onesided_shim(struct fid_domain *domain, struct fi_tx_attr *attr, struct fid_stx **stx, void *context) { return fi_stx_context(domain, attr, stx, context); }
int fi_srx_context_onesided_shim(struct fid_domain *domain, struct fi_rx_attr *attr, struct fid_ep **rx_ep, void *context) { return fi_srx_context(domain, attr, rx_ep, context); }
ssize_t fi_recv_onesided_shim(struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t src_addr, void *context) { return fi_recv(ep, buf, len, desc, src_addr, context); }
ssize_t fi_recvv_onesided_shim(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count, fi_addr_t src_addr, void *context) { return fi_recvv(ep, iov, desc, count, src_addr, context); }
ssize_t fi_recvmsg_onesided_shim(struct fid_ep *ep, const struct fi_msg *msg, uint64_t flags) { return fi_recvmsg(ep, msg, flags); }
ssize_t fi_send_onesided_shim(struct fid_ep *ep, const void *buf, size_t len, void *desc, fi_addr_t dest_addr, void *context) { return fi_send(ep, buf, len, desc, dest_addr, context); }
ssize_t fi_sendv_onesided_shim(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count, fi_addr_t dest_addr, void *context) { return fi_sendv(ep, iov, desc, count, dest_addr, context); }
ssize_t fi_sendmsg_onesided_shim(struct fid_ep *ep, const struct fi_msg *msg, uint64_t flags) { return fi_sendmsg(ep, msg, flags); }
ssize_t fi_inject_onesided_shim(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest_addr) { return fi_inject(ep, buf, len, dest_addr); }
ssize_t fi_senddata_onesided_shim(struct fid_ep *ep, const void *buf, size_t len, void *desc, uint64_t data, fi_addr_t dest_addr, void *context) { return fi_senddata(ep, buf, len, desc, data, dest_addr, context); }
ssize_t fi_injectdata_onesided_shim(struct fid_ep *ep, const void *buf, size_t len, uint64_t data, fi_addr_t dest_addr) { return fi_injectdata(ep, buf, len, data, dest_addr); }
int fi_setname_onesided_shim(fid_t fid, void *addr, size_t addrlen) { return fi_setname(fid, addr, addrlen); }
int fi_getname_onesided_shim(fid_t fid, void *addr, size_t *addrlen) { return fi_getname(fid, addr, addrlen); }
int fi_getpeer_onesided_shim(struct fid_ep *ep, void *addr, size_t *addrlen) { return fi_getpeer(ep, addr, addrlen); }
int fi_listen_onesided_shim(struct fid_pep *pep) { return fi_listen(pep); }
int fi_connect_onesided_shim(struct fid_ep *ep, const void *addr, const void *param, size_t paramlen) { return fi_connect(ep, addr, param, paramlen); }
int fi_accept_onesided_shim(struct fid_ep *ep, const void *param, size_t paramlen) { return fi_accept(ep, param, paramlen); }
int fi_reject_onesided_shim(struct fid_pep *pep, fid_t handle, const void *param, size_t paramlen) { return fi_reject(pep, handle, param, paramlen); }
int fi_shutdown_onesided_shim(struct fid_ep *ep, uint64_t flags) { return fi_shutdown(ep, flags); }
int fi_join_onesided_shim(struct fid_ep *ep, const void *addr, uint64_t flags, struct fid_mc **mc, void *context) { return fi_join(ep, addr, flags, mc, context); }
fi_addr_t fi_mc_addr_onesided_shim(struct fid_mc *mc) { return fi_mc_addr(mc); }
ssize_t fi_read_onesided_shim(struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t src_addr, uint64_t addr, uint64_t key, void *context) { return fi_read(ep, buf, len, desc, src_addr, addr, key, context); }
ssize_t fi_readv_onesided_shim(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count, fi_addr_t src_addr, uint64_t addr, uint64_t key, void *context) { return fi_readv(ep, iov, desc, count, src_addr, addr, key, context); }
ssize_t fi_readmsg_onesided_shim(struct fid_ep *ep, const struct fi_msg_rma *msg, uint64_t flags) { return fi_readmsg(ep, msg, flags); }
ssize_t fi_write_onesided_shim(struct fid_ep *ep, const void *buf, size_t len, void *desc, fi_addr_t dest_addr, uint64_t addr, uint64_t key, void *context) { return fi_write(ep, buf, len, desc, dest_addr, addr, key, context); }
ssize_t fi_writev_onesided_shim(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count, fi_addr_t dest_addr, uint64_t addr, uint64_t key, void *context) { return fi_writev(ep, iov, desc, count, dest_addr, addr, key, context); }
ssize_t fi_writemsg_onesided_shim(struct fid_ep *ep, const struct fi_msg_rma *msg, uint64_t flags) { return fi_writemsg(ep, msg, flags); }
ssize_t fi_inject_write_onesided_shim(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest_addr, uint64_t addr, uint64_t key) { return fi_inject_write(ep, buf, len, dest_addr, addr, key); }
ssize_t fi_writedata_onesided_shim(struct fid_ep *ep, const void *buf, size_t len, void *desc, uint64_t data, fi_addr_t dest_addr, uint64_t addr, uint64_t key, void *context) { return fi_writedata(ep, buf, len, desc, data, dest_addr, addr, key, context); }
ssize_t fi_inject_writedata_onesided_shim(struct fid_ep *ep, const void *buf, size_t len, uint64_t data, fi_addr_t dest_addr, uint64_t addr, uint64_t key) { return fi_inject_writedata(ep, buf, len, data, dest_addr, addr, key); }
ssize_t fi_atomic_onesided_shim(struct fid_ep *ep, const void *buf, size_t count, void *desc, fi_addr_t dest_addr, uint64_t addr, uint64_t key, enum fi_datatype datatype, enum fi_op op, void *context) { return fi_atomic(ep, buf, count, desc, dest_addr, addr, key, datatype, op, context); }
ssize_t fi_atomicv_onesided_shim(struct fid_ep *ep, const struct fi_ioc *iov, void **desc, size_t count, fi_addr_t dest_addr, uint64_t addr, uint64_t key, enum fi_datatype datatype, enum fi_op op, void *context) { return fi_atomicv(ep, iov, desc, count, dest_addr, addr, key, datatype, op, context); }
ssize_t fi_atomicmsg_onesided_shim(struct fid_ep *ep, const struct fi_msg_atomic *msg, uint64_t flags) { return fi_atomicmsg(ep, msg, flags); }
ssize_t fi_inject_atomic_onesided_shim(struct fid_ep *ep, const void *buf, size_t count, fi_addr_t dest_addr, uint64_t addr, uint64_t key, enum fi_datatype datatype, enum fi_op op) { return fi_inject_atomic(ep, buf, count, dest_addr, addr, key, datatype, op); }
ssize_t fi_fetch_atomic_onesided_shim(struct fid_ep *ep, const void *buf, size_t count, void *desc, void *result, void *result_desc, fi_addr_t dest_addr, uint64_t addr, uint64_t key, enum fi_datatype datatype, enum fi_op op, void *context) { return fi_fetch_atomic(ep, buf, count, desc, result, result_desc, dest_addr, addr, key, datatype, op, context); }
ssize_t fi_fetch_atomicv_onesided_shim(struct fid_ep *ep, const struct fi_ioc *iov, void **desc, size_t count, struct fi_ioc *resultv, void **result_desc, size_t result_count, fi_addr_t dest_addr, uint64_t addr, uint64_t key, enum fi_datatype datatype, enum fi_op op, void *context) { return fi_fetch_atomicv(ep, iov, desc, count, resultv, result_desc, result_count, dest_addr, addr, key, datatype, op, context); }
ssize_t fi_fetch_atomicmsg_onesided_shim(struct fid_ep *ep, const struct fi_msg_atomic *msg, struct fi_ioc *resultv, void **result_desc, size_t result_count, uint64_t flags) { return fi_fetch_atomicmsg(ep, msg, resultv, result_desc, result_count, flags); }
ssize_t fi_compare_atomic_onesided_shim(struct fid_ep *ep, const void *buf, size_t count, void *desc, const void *compare, void *compare_desc, void *result, void *result_desc, fi_addr_t dest_addr, uint64_t addr, uint64_t key, enum fi_datatype datatype, enum fi_op op, void *context) { return fi_compare_atomic(ep, buf, count, desc, compare, compare_desc, result, result_desc, dest_addr, addr, key, datatype, op, context); }
ssize_t fi_compare_atomicv_onesided_shim(struct fid_ep *ep, const struct fi_ioc *iov, void **desc, size_t count, const struct fi_ioc *comparev, void **compare_desc, size_t compare_count, struct fi_ioc *resultv, void **result_desc, size_t result_count, fi_addr_t dest_addr, uint64_t addr, uint64_t key, enum fi_datatype datatype, enum fi_op op, void *context) { return fi_compare_atomicv(ep, iov, desc, count, comparev, compare_desc, compare_count, resultv, result_desc, result_count, dest_addr, addr, key, datatype, op, context); }
ssize_t fi_compare_atomicmsg_onesided_shim(struct fid_ep *ep, const struct fi_msg_atomic *msg, const struct fi_ioc *comparev, void **compare_desc, size_t compare_count, struct fi_ioc *resultv, void **result_desc, size_t result_count, uint64_t flags) { return fi_compare_atomicmsg(ep, msg, comparev, compare_desc, compare_count, resultv, result_desc, result_count, flags); }
int fi_atomicvalid_onesided_shim(struct fid_ep *ep, enum fi_datatype datatype, enum fi_op op, size_t *count) { return fi_atomicvalid(ep, datatype, op, count); }
int fi_fetch_atomicvalid_onesided_shim(struct fid_ep *ep, enum fi_datatype datatype, enum fi_op op, size_t *count) { return fi_fetch_atomicvalid(ep, datatype, op, count); }
int fi_compare_atomicvalid_onesided_shim(struct fid_ep *ep, enum fi_datatype datatype, enum fi_op op, size_t *count) { return fi_compare_atomicvalid(ep, datatype, op, count); }
int fi_query_atomic_onesided_shim(struct fid_domain *domain, enum fi_datatype datatype, enum fi_op op, struct fi_atomic_attr *attr, uint64_t flags) { return fi_query_atomic(domain, datatype, op, attr, flags); }
ssize_t fi_trecv_onesided_shim(struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t src_addr, uint64_t tag, uint64_t ignore, void *context) { return fi_trecv(ep, buf, len, desc, src_addr, tag, ignore, context); }
ssize_t fi_trecvv_onesided_shim(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count, fi_addr_t src_addr, uint64_t tag, uint64_t ignore, void *context) { return fi_trecvv(ep, iov, desc, count, src_addr, tag, ignore, context); }
ssize_t fi_trecvmsg_onesided_shim(struct fid_ep *ep, const struct fi_msg_tagged *msg, uint64_t flags) { return fi_trecvmsg(ep, msg, flags); }
ssize_t fi_tsend_onesided_shim(struct fid_ep *ep, const void *buf, size_t len, void *desc, fi_addr_t dest_addr, uint64_t tag, void *context) { return fi_tsend(ep, buf, len, desc, dest_addr, tag, context); }
ssize_t fi_tsendv_onesided_shim(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count, fi_addr_t dest_addr, uint64_t tag, void *context) { return fi_tsendv(ep, iov, desc, count, dest_addr, tag, context); }
ssize_t fi_tsendmsg_onesided_shim(struct fid_ep *ep, const struct fi_msg_tagged *msg, uint64_t flags) { return fi_tsendmsg(ep, msg, flags); }
ssize_t fi_tinject_onesided_shim(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest_addr, uint64_t tag) { return fi_tinject(ep, buf, len, dest_addr, tag); }
ssize_t fi_tsenddata_onesided_shim(struct fid_ep *ep, const void *buf, size_t len, void *desc, uint64_t data, fi_addr_t dest_addr, uint64_t tag, void *context) { return fi_tsenddata(ep, buf, len, desc, data, dest_addr, tag, context); }
ssize_t fi_tinjectdata_onesided_shim(struct fid_ep *ep, const void *buf, size_t len, uint64_t data, fi_addr_t dest_addr, uint64_t tag) { return fi_tinjectdata(ep, buf, len, data, dest_addr, tag); }
