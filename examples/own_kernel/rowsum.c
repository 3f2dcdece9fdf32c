/* y[i] = sum over j of A[i*m + j]. ACC: independent partial sums (breaks the add chain);
 * UNROLL: steps of ACC elements per loop iteration. */
void rowsum(float *y, const float *A, long long n, long long m)
{
    for (long long i = 0; i < n; i++) {
        const float *row = A + i * m;
        float acc[ACC] = {0};
        long long j = 0;
        for (; j + ACC * UNROLL <= m; j += ACC * UNROLL)
            for (int u = 0; u < UNROLL; u++)
                for (int a = 0; a < ACC; a++)
                    acc[a] += row[j + u * ACC + a];
        float s = 0;
        for (int a = 0; a < ACC; a++)
            s += acc[a];
        for (; j < m; j++)
            s += row[j];
        y[i] = s;
    }
}
