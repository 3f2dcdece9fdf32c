-- Issue 31: a replay dataset's kernel is named by its file's "kernel" key when it has one, so that no
-- name means two kernels. datasets/gemm_clblast-RTX_2080_Ti.json.gz (CLBlast's Xgemm, recorded on an
-- RTX 2080 Ti) was kernel "gemm", the name of the cpu catalog's own gemm (another kernel, other
-- parameters); it is now "clblast_gemm". Its stored results keep answering under the new name: the
-- jobs, the best table and the models of that replay class are renamed (the kernel hash, the space's
-- definition, is unchanged). Other classes' "gemm" rows are the cpu kernel's and stay.
UPDATE jobs SET kernel = 'clblast_gemm'
 WHERE kernel = 'gemm' AND device_class = 'replay:gemm_clblast-RTX_2080_Ti';
UPDATE best SET kernel = 'clblast_gemm'
 WHERE kernel = 'gemm' AND device_class = 'replay:gemm_clblast-RTX_2080_Ti';
UPDATE models SET kernel = 'clblast_gemm'
 WHERE kernel = 'gemm' AND device_class = 'replay:gemm_clblast-RTX_2080_Ti';
