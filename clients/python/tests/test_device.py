"""ktune.device_class: the cpu class ktuned gives (service/measure/device.c over the runner's probe)."""
import os
import unittest

from ktune.device import class_part, cpu_class_from_cpuinfo, device_class

INTEL = ("processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+ \n"
         "flags\t\t: fpu sse4_2 avx avx2 fma avx512f avx512bw\n\nprocessor\t: 1\n"
         "model name\t: Other\nflags\t\t: fpu\n")
AMD = "model name\t: AMD EPYC 7763 64-Core Processor\nflags\t\t: fpu avx avx2 fma\n\n"
ARM = "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd evtstrm sve\nCPU part\t: 0xd40\n\n"


class DeviceClassTest(unittest.TestCase):
    def test_class_part(self):
        self.assertEqual(class_part("Intel(R) Xeon(R) Platinum 8480+"), "Intel_R_Xeon_R_Platinum_8480")
        self.assertEqual(class_part("  AMD EPYC  "), "AMD_EPYC")
        self.assertEqual(class_part("a.b-c_d"), "a.b-c_d")
        self.assertEqual(class_part("()"), "?")
        self.assertEqual(len(class_part("x" * 400)), 158)  # DEVICE_MAX_CLASS 160: stops at n + 2

    def test_cpuinfo(self):
        self.assertEqual(cpu_class_from_cpuinfo(INTEL), "cpu:Intel_R_Xeon_R_Platinum_8480:512")
        self.assertEqual(cpu_class_from_cpuinfo(AMD), "cpu:AMD_EPYC_7763_64-Core_Processor:256")
        self.assertEqual(cpu_class_from_cpuinfo(ARM), "cpu:unknown:128")
        self.assertEqual(cpu_class_from_cpuinfo(""), "cpu:unknown:128")

    def test_this_machine(self):
        c = device_class()
        self.assertRegex(c, r"^(cpu:[A-Za-z0-9._-]+:(128|256|512)|external:.+)$")
        if os.path.exists("/proc/cpuinfo"):
            self.assertTrue(c.startswith("cpu:"))
        with self.assertRaises(ValueError):
            device_class("tpu")


if __name__ == "__main__":
    unittest.main()
